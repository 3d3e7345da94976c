"""Leak scan of a proposed patch (pure, no I/O).

A patch that copies evaluation data into a skill overfits the sets and makes every later score a lie;
a patch that carries a secret, a prompt injection or a path out of its folder is unsafe. Only the
text the patch *adds* is scanned (`added_text`), so a skill that already quotes an example is not
blamed for it, and text the live skill already holds is not the patch's finding (`scan_leaks`:
`parent`): appending an item to an `examples:` line that already quoted a query re-writes the
line, it does not copy the query. The scan rejects:
- case ids of any partition;
- any partition's queries (holdout and final_audit included), exactly and as long shared n-grams:
  >= NGRAM_CJK CJK characters or >= NGRAM_WORDS words in a row;
- expected facts, fixture constants and nonces;
- holdout and final_audit numbers (3+ digits, or two with a CJK unit) in any spelling, and near-copies
  of holdout and final_audit facts (reordered, or most of their content words): rules/leaknumbers.py
  and rules/leakgen.py (spellings written out); their rare names alone ("Lindqvist"): rules/leaknames.py;
- held-out Chinese terms: a line near a holdout or final_audit query, or the held-out-only words of three
  or more held-out cases (their places): rules/leakterms.py;
- any partition's queries shifted by a few code points or by a Caesar key: rules/leakshift.py;
- secrets (API-key and token shapes, also with the spaces or line breaks inside a token-like run
  taken out, private keys, credential assignments whose value looks like a credential, a generic
  key with a high-entropy value: rules/secrets.py `secret_spans`, the skill-file scan's own loop);
- prompt-injection phrases and paths outside the skill folder (rules/leakpatterns.py).

Matching happens in one normal form, `textnorm.fold`, applied identically to the patch and to every
partition's text, so zero-width characters, homoglyphs, full-width forms, combining marks, Traditional
characters, numbers written in words (English, Chinese or Roman before a unit), digit separators, a
space before a unit ("16 分钟"), a unit in Latin letters ("16 min", "96 CNY"), markdown emphasis,
line breaks (also inside a CJK word), HTML character references and case do not hide a copy; case
ids are compared with `_` as `-` ("HOLDOUT_TAXI_HAILING_00"). Which values count as distinctive
(`_distinctive`) is decided on the raw value: "eighteen pounds" is flagged only where "18 pounds" is.
The copied-text rules also read decoded views of the text (rules/leakviews.py: percent-decoded, base64,
hyphen-joined, letters-joined, reversed, rot13, leet, ordinals); a finding there names its view.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum

from skillforge.rules.leaknames import HeldOutNames
from skillforge.rules.leakshift import ShiftIndex
from skillforge.rules.leakterms import HeldOutTerms
from skillforge.rules.leakpatterns import INJECTION_PATTERNS, PATH_PATTERNS, path_escapes  # noqa: F401 (path_escapes: callers import it here)
from skillforge.rules.leaknumbers import HELD_OUT, HeldOut, scalars
from skillforge.rules.leakviews import added_text, leak_views, view_name, view_of  # noqa: F401 (added_text: callers import it here)
from skillforge.rules.overrides import overrides
from skillforge.rules.secrets import CREDENTIAL_LABEL, GENERIC_LABEL, secret_spans
from skillforge.rules.textnorm import digits_as_letters, fold, read_chinese_numerals, visible

NGRAM_CJK = 8
"""A run of this many CJK characters shared with an eval query is a leak."""
NGRAM_WORDS = 5
"""A run of this many words shared with an eval query is a leak."""
MIN_EXACT_QUERY_CHARS = 6
"""A whole query shorter than this (normalised) is too generic to count as copied."""
MIN_CONSTANT_CHARS = 5
"""Fixture strings shorter than this are not distinctive (e.g. "ok", "18:30" is 5 and counts)."""
MIN_FACT_CHARS = 4


class LeakKind(StrEnum):
    CASE_ID = "case_id"
    QUERY = "query"
    QUERY_NGRAM = "query_ngram"
    EXPECTED_FACT = "expected_fact"
    FIXTURE_CONSTANT = "fixture_constant"
    HELD_OUT_NUMBER = "held_out_number"
    NEAR_COPY = "near_copy"
    HELD_OUT_NAME = "held_out_name"
    NONCE = "nonce"
    SECRET = "secret"
    INJECTION = "prompt_injection"
    PATH_ESCAPE = "path_escape"


@dataclass(frozen=True)
class LeakFinding:
    """One reason to reject a patch: what kind, the offending text, and where it came from."""

    kind: LeakKind
    evidence: str
    source: str = ""
    """The case id (and partition) the text was copied from, when there is one."""
    view: str = ""
    """The decoded view of the text it was found in (rules/leakviews.py: "percent-decoded"), if not as written."""

    def __str__(self) -> str:
        where = f", found in the {self.view} text" if self.view else ""
        return f"{self.kind}: {self.evidence!r}" + (f" (from {self.source}{where})" if self.source else "")


@dataclass(frozen=True)
class EvalText:
    """What one case contributes to the scan: its id, partition, query, facts and fixture values."""

    case_id: str
    partition: str
    query: str
    facts: tuple[str, ...] = ()
    fixtures_json: str = "{}"


@dataclass(frozen=True)
class _Needle:
    """One protected value in its folded form, with what a match of it reports."""

    kind: LeakKind
    evidence: str
    folded: str
    source: str
    case_id: str
    token: bool
    """An id or a number: it matches as a whole token only."""


@dataclass(frozen=True)
class LeakContext:
    """Everything a patch must not contain. Built once per round from all partitions' cases; every
    protected text is folded here, once, so a scan folds only the patch."""

    cases: tuple[EvalText, ...]
    nonces: frozenset[str] = frozenset()
    _ngrams: dict[str, str] = field(default_factory=dict, compare=False, repr=False)
    _needles: list[_Needle] = field(default_factory=list, compare=False, repr=False)
    _held_out: HeldOut = field(default_factory=HeldOut, compare=False, repr=False)
    _names: HeldOutNames = field(default_factory=HeldOutNames, compare=False, repr=False)
    _terms: HeldOutTerms = field(default_factory=HeldOutTerms, compare=False, repr=False)
    _shifts: ShiftIndex = field(default_factory=ShiftIndex, compare=False, repr=False)

    def __post_init__(self) -> None:
        for case in self.cases:
            source = f"{case.partition}/{case.case_id}"
            self._held_out.add(case.partition, source, case.query, case.facts, case.fixtures_json)
            self._names.add(case.partition, source, (case.query, *case.facts, *_fixture_values(case.fixtures_json)))
            self._terms.add(case.partition, source, case.query, (*case.facts, *_fixture_values(case.fixtures_json)))
            self._shifts.add(source, case.query)
            base = fold(case.query, chinese_numerals=False)
            query = read_chinese_numerals(base)
            for gram in _ngrams(base, query):  # an n-gram a visible case holds too is named from it (QA 46 F6)
                if gram not in self._ngrams or (case.partition not in HELD_OUT
                                                and self._ngrams[gram].split("/", 1)[0] in HELD_OUT):
                    self._ngrams[gram] = source
            self._needles.extend(_case_needles(case, source, query))


NONCE_RE = re.compile(r"\bsfn-[0-9a-f]{6,}\b")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[a-z0-9]+(?:['’][a-z]+)?")
_TOKEN = re.compile(r"[a-z0-9_\-.:]+")
_TOKEN_RIGHT = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")
_TOKEN_LEFT = _TOKEN_RIGHT | {"-"}
_NUMBER_WITH_UNIT = re.compile(r"\d{2,}(?:\.\d+)?\s*[\u3400-\u4dbf\u4e00-\u9fff]{1,3}")
_NUMBER_EDGE = frozenset("0123456789")


def _cjk_runs(text: str) -> list[str]:
    """The CJK characters of `text` in order, per run uninterrupted by Latin words or digits."""
    runs: list[str] = []
    current: list[str] = []
    for ch in text:
        if _CJK.match(ch):
            current.append(ch)
        elif ch.isalnum():
            if current:
                runs.append("".join(current))
            current = []
        # punctuation and spaces do not break a run: "周六晚上，鼎泰丰" is one phrase
    if current:
        runs.append("".join(current))
    return runs


def _ngrams(base: str, folded: str) -> set[str]:
    """CJK 8-grams of `base` (folded with Chinese numerals kept as characters) and word 5-grams
    of `folded` (the full fold: "seventy-three" is one word, 73)."""
    grams: set[str] = set()
    for run in _cjk_runs(base):
        grams.update("c:" + run[i:i + NGRAM_CJK] for i in range(len(run) - NGRAM_CJK + 1))
    words = _WORD.findall(folded)
    grams.update("w:" + " ".join(words[i:i + NGRAM_WORDS]) for i in range(len(words) - NGRAM_WORDS + 1))
    return grams


def _distinctive(value: str, minimum: int) -> bool:
    """Ids, numbers with units, addresses: long enough and carrying a digit or CJK or an underscore;
    and, however short, a number of two or more digits with its CJK unit ("96元", "16 分钟"). A bare
    number under `minimum` characters ("96") is not: it would flag every price or time a skill
    gives (the fares of one set of 22 cases cover 40-187)."""
    v = value.strip()
    if _NUMBER_WITH_UNIT.fullmatch(v):
        return True
    if len(v) < minimum:
        return False
    return bool(re.search(r"\d|_", v)) or bool(_CJK.search(v)) or len(v) >= 12


def _needle(kind: LeakKind, evidence: str, source: str, case_id: str, folded: str | None = None) -> _Needle | None:
    """`evidence` as a needle (folded unless given), or None when it folds to nothing."""
    n = fold(evidence) if folded is None else folded
    if not n:
        return None
    return _Needle(kind, evidence, n, source, case_id, _TOKEN.fullmatch(n) is not None)


def id_form(folded: str) -> str:
    """A folded text as case ids are compared in: `_` read as `-` (fold has already folded case), so
    "HOLDOUT_TAXI_HAILING_00" is the id holdout-taxi-hailing-00."""
    return folded.replace("_", "-")


def _fixture_values(fixtures_json: str) -> list[str]:
    """Every leaf of a case's fixtures as text (none when they are not JSON)."""
    try:
        return list(scalars(json.loads(fixtures_json)))
    except ValueError:
        return []


def _case_needles(case: EvalText, source: str, query: str) -> list[_Needle]:
    """What one case protects, in report order: its id (in `id_form`), its query (when long enough to be more
    than generic), its distinctive facts and its distinctive fixture values."""
    found = [_needle(LeakKind.CASE_ID, case.case_id, source, case.case_id, id_form(fold(case.case_id)))]
    if len(query) >= MIN_EXACT_QUERY_CHARS:
        found.append(_Needle(LeakKind.QUERY, case.query, query, source, case.case_id, False))
    found += [_needle(LeakKind.EXPECTED_FACT, f, source, case.case_id)
              for f in case.facts if _distinctive(f, MIN_FACT_CHARS)]
    found += [_needle(LeakKind.FIXTURE_CONSTANT, v, source, case.case_id)
              for v in _fixture_values(case.fixtures_json) if _distinctive(v, MIN_CONSTANT_CHARS)]
    return [n for n in found if n is not None]


def _count(needle: _Needle, folded: str, stop: int = 0) -> int:
    """How often `needle` occurs in `folded` (up to `stop` when given); a token needle not inside a
    longer id or number (no letter, digit, '_' or '-' before it, no letter, digit or '_' after it);
    another needle not inside a longer number ("16分钟" is not found in "116分钟")."""
    n = needle.folded
    left, right = (_TOKEN_LEFT, _TOKEN_RIGHT) if needle.token else (
        _NUMBER_EDGE if n[0].isdigit() else frozenset(), _NUMBER_EDGE if n[-1].isdigit() else frozenset())
    count = 0
    i = folded.find(n)
    while i != -1:
        end = i + len(n)
        if (i == 0 or folded[i - 1] not in left) and (end == len(folded) or folded[end] not in right):
            count += 1
            if count == stop:
                break
        i = folded.find(n, i + 1)
    return count


def _gram_count(gram: str, base: str, folded: str) -> int:
    """How often an n-gram of `_ngrams` occurs in a text (its two folds, as `_ngrams` reads them)."""
    if gram.startswith("c:"):
        return sum(run.count(gram[2:]) for run in _cjk_runs(base))
    want = gram[2:].split()
    words = _WORD.findall(folded)
    return sum(words[i:i + len(want)] == want for i in range(len(words) - len(want) + 1))


@dataclass
class _Public:
    """The live skill's text in the scan's folds, made only when a copied text needs the comparison: a
    query, fact, fixture value or n-gram is the patch's finding only when the patched skill holds it
    more often than the live one did (appending an item to an `examples:` line that already quoted a
    query re-writes that line, it does not copy the query)."""

    parent: str
    candidate: str | tuple[str, str]
    """The patched skill whose counts are compared: its text, or its (base, norm) folds."""
    _folds: tuple[str, str] | None = None

    def folds(self) -> tuple[str, str]:
        if self._folds is None:
            self._folds = _folds(self.parent)
        return self._folds

    def reference(self) -> tuple[str, str]:
        if isinstance(self.candidate, str):
            self.candidate = _folds(self.candidate)
        return self.candidate

    def holds(self, needle: _Needle) -> bool:
        if not self.parent:
            return False
        norm = self.folds()[1]
        have = _count(needle, id_form(norm) if needle.kind is LeakKind.CASE_ID else norm)
        if have == 0:
            return False
        ref = self.reference()[1]
        return _count(needle, id_form(ref) if needle.kind is LeakKind.CASE_ID else ref) <= have

    def holds_gram(self, gram: str) -> bool:
        if not self.parent:
            return False
        have = _gram_count(gram, *self.folds())
        return have > 0 and _gram_count(gram, *self.reference()) <= have


def scan_leaks(text: str, ctx: LeakContext, *, case_id_exempt: frozenset[str] = frozenset(),
               parent: str = "", candidate: str | None = None) -> list[LeakFinding]:
    """Every leak in `text` (normally `added_text(parent, candidate)`), most severe kinds first.
    Secrets, nonces and paths are matched in what a reader sees (`visible`), injection phrases and
    everything copied from the cases in the folded form (`fold`), the copied text also in each decoded
    view (`leak_views`). `parent`: the live skill; a held-out number, near-copy or name it (or its
    same view) holds is not the patch's finding, nor a query, fact, fixture value or n-gram it holds
    at least as often as `candidate` (the patched skill; `text` when not given) does."""
    findings: list[LeakFinding] = []
    seen_text = visible(text)
    base, norm = _folds(text)
    public = _Public(parent, (base, norm) if candidate is None or candidate == text else candidate)
    findings += [LeakFinding(LeakKind.SECRET, s.key[:24] + "=…" if s.label in (CREDENTIAL_LABEL, GENERIC_LABEL)
                             else s.prefix[:12] + "…", s.label) for s in secret_spans(seen_text)]  # never the value
    lettered = digits_as_letters(text)  # "ign०re": a digit used as a letter is read as one for these patterns
    readings = dict.fromkeys((norm, fold(lettered) if lettered != text else norm))
    findings += [LeakFinding(LeakKind.INJECTION, m.group(0)) for r in readings for p in INJECTION_PATTERNS for m in p.finditer(r)]
    if not any(f.kind is LeakKind.INJECTION for f in findings):  # other languages and paraphrase (rules/overrides.py)
        findings.extend(LeakFinding(LeakKind.INJECTION, phrase) for phrase in overrides(seen_text))
    findings += [LeakFinding(LeakKind.PATH_ESCAPE, m.group(0).strip()) for p in PATH_PATTERNS for m in p.finditer(seen_text)]
    findings += [LeakFinding(LeakKind.NONCE, m.group(0)) for m in NONCE_RE.finditer(seen_text)]
    findings += [LeakFinding(LeakKind.NONCE, nonce) for nonce in ctx.nonces
                 if nonce and not NONCE_RE.search(nonce) and (folded := fold(nonce)) and folded in norm]
    copied = _copied(text, ctx, (base, norm), public, parent, case_id_exempt)
    findings += [LeakFinding(kind, evidence, source) for kind, evidence, source in copied]
    sources = {source for _, _, source in copied}
    views = leak_views(text)  # decoded views (rules/leakviews.py): copied text only; all at once first (one scan
    merged = "\n".join(v for _, v in views)  # when nothing is found, the usual case), then each, to name it
    for key, view in views if merged and any(h[2] not in sources for h in _copied(
            merged, ctx, _folds(merged), _Public("", ""), "", case_id_exempt)) else ():
        folds = _folds(view)
        hits = [h for h in _copied(view, ctx, folds, _Public("", ""), "", case_id_exempt) if h[2] not in sources]
        if hits and parent:  # what the live skill's own view holds is not the patch's finding
            shown = view_of(key, parent)
            hits = [h for h in _copied(view, ctx, folds, _Public(shown, view_of(key, candidate or text)), shown,
                                       case_id_exempt) if h[2] not in sources]
        findings += [LeakFinding(kind, evidence, source, view_name(key)) for kind, evidence, source in hits]
        sources |= {source for _, _, source in hits}
    findings += [LeakFinding(LeakKind.QUERY, evidence, source) for evidence, source in ctx._shifts.scan(text, parent, seen_text)
                 if source not in sources]  # a query shifted by a few code points or a Caesar key (rules/leakshift.py)
    return findings


def _folds(text: str) -> tuple[str, str]:  # `text` folded with Chinese numerals kept (CJK n-grams' form), and fully
    base = fold(text, chinese_numerals=False)
    return base, read_chinese_numerals(base)


def _copied(text: str, ctx: LeakContext, folds: tuple[str, str], public: _Public, parent: str,
            case_id_exempt: frozenset[str]) -> list[tuple[LeakKind, str, str]]:
    """(kind, evidence, source) of each case text `text` copies (`folds`: its `_folds`): ids, queries,
    facts and fixture values, then held-out numbers, near-copies and names of a case not already
    reported as copied, then query n-grams of a query not reported; one per (kind, evidence)."""
    base, norm = folds
    ids = id_form(norm)
    found: dict[tuple[LeakKind, str], str] = {}  # (kind, evidence) -> source, the first one found
    add = lambda kind, evidence, source: found.setdefault((kind, evidence), source)  # noqa: E731

    for needle in ctx._needles:
        if needle.kind is LeakKind.CASE_ID and needle.case_id in case_id_exempt:
            continue
        if _count(needle, ids if needle.kind is LeakKind.CASE_ID else norm, stop=1) and not public.holds(needle):
            add(needle.kind, needle.evidence, needle.source)
    reported_queries = {s for (k, _), s in found.items() if k is LeakKind.QUERY}
    copied = {s for (k, _), s in found.items() if k in (LeakKind.QUERY, LeakKind.EXPECTED_FACT, LeakKind.FIXTURE_CONSTANT)}
    for kind, evidence, source in ctx._held_out.scan(text, parent, folded=norm):
        if source not in copied:  # a case already reported as copied is not reported again in parts
            add(LeakKind(kind), evidence, source)
    for name, source in ctx._names.scan(text, parent, folded=norm):  # a rare held-out name alone
        if source not in copied:
            add(LeakKind.HELD_OUT_NAME, name, source)
    for gram in sorted(_ngrams(base, norm)):
        source = ctx._ngrams.get(gram)
        if source and source not in reported_queries and not public.holds_gram(gram):
            add(LeakKind.QUERY_NGRAM, gram[2:], source)
            reported_queries.add(source)
    for kind, evidence, source in ctx._terms.scan(text, parent, folded=base):  # held-out CJK terms, near-copies (rules/leakterms.py)
        if source not in copied and source not in reported_queries:
            add(LeakKind(kind), evidence, source)
    return [(kind, evidence, source) for (kind, evidence), source in found.items()]
