"""Secret shapes (pure, no I/O): what the leak scan of a patch refuses and what redaction of session
text replaces.

Two kinds of rule:
- distinctive token shapes (`SECRET_PATTERNS`): a vendor prefix and a body, so a match is a secret
  wherever it appears. The shapes follow the maintained scanners' rules: gitleaks'
  config/gitleaks.toml (github-fine-grained-pat `github_pat_\\w{82}`, stripe-access-token
  `(?:sk|rk)_(?:test|live|prod)_[a-zA-Z0-9]{10,99}`, npm-access-token `npm_[a-z0-9]{36}`, gitlab-pat
  `glpat-[\\w-]{20}`, huggingface-access-token `hf_[a-z]{34}` case-insensitive, aws-access-token,
  slack, gcp-api-key, private-key) and Yelp/detect-secrets (plugins/aws.py: a secret access key is
  40 characters of `[A-Za-z0-9+/=]`, found next to its key name). Bodies are matched a little more
  loosely than the scanners (a minimum length rather than an exact one), because a transcript may
  hold a sample or a truncated token that is still a credential. A password in a URL
  (`URL_PASSWORD`: `postgres://backup:hunter2…@db`) is one too, unless it is a placeholder.
- the credential assignment (`credential_matches`): a key name that carries a credential word
  (`password`, `DB_PASSWORD`, `PGPASSWORD`, `client_secret`, `aws_secret_access_key`, `x-api-key`,
  `"password":`, `SIGNING_KEY`), a separator (`=`, `:`, `:=`, `=>`, ` is `, or a `--flag` and a
  space) and a value. Whether the value counts depends on the strictness:
  - strict (the leak scan of a patch): the value must look like a credential: at least 8
    characters, no spaces, not a placeholder, and a letter mixed with a digit or a symbol (or upper
    and lower case over 20+ characters). Skill prose such as "password: ask the user for it" or "the
    secret: keep it safe" is not refused;
  - lenient (redaction of session text): any value that is not a placeholder or a common word, so
    `password=hunter2` goes too; a false positive there only hides a word.
- the high-entropy key assignment (`generic_matches`): a key named only generically (`KEY`, `TOKEN`,
  `auth`, `credentials`, `signing_key`) holding a bare base64 or hex value of 20+ characters with
  real entropy (`high_entropy`): `KEY = "Zm9vYmFy…="`, `export TOKEN=3f9a…`. A placeholder (`xxxx…`,
  `<your-key>`, `${VAR}`, `changeme`, one character repeated, a word or an identifier) is not one.
`secret_spans(text)` runs all of them and the redaction's other shapes (rules/redact.secret_shapes: a JWT,
a base64 `user:pass`), for both the evolve leak scan and the skill-file scan.
The leak scan also matches the token shapes in `joined_tokens(text)`: a token split by spaces or a line break
(`ghp_4Xk9LmQ2 wR8sT1vY6bN3 cD5eF7gH0jK2lM4n`) is the token. Session redaction does not (a false join there would
hide prose); a set case's text shown to a proposer does (`split_secrets`, rules/casetext.for_proposer).
A placeholder is `<your-key>`, `${VAR}`, `$VAR`, `***`, `xxx`, `changeme`, `[REDACTED:...]`, an
env var's name (`GITHUB_TOKEN`), a reference in code (`os.environ`, `settings.secret`, a call) and
the like. Key names that describe a credential rather than hold one (`token_type`, `password_hint`,
`api_key_file`, `secret_name`, `token_count`) are not assignments.
"""

from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from skillforge.rules.anchored import Folded, key_starts, matches, shape_matches

URL_LABEL = "URL password"
_URL_CHAR = r"[^\s:/?#@'\"`<>(){}\[\]\\,;]"
_URL_PLACEHOLDER = (r"(?i:(?:[a-z_-]|%20)*(?:pass|secret|pwd|pw|token|key)(?:[a-z_-]|%20)*\d{0,3}|changeme|change-me|example|sample|dummy|"
                    r"test|foo|bar|foobar|redacted|hidden|masked|placeholder|x+|\*+|•+|\.+|…|%[A-Za-z_]+%?)@")
URL_PASSWORD = re.compile(
    r"\b(?P<scheme>[A-Za-z][A-Za-z0-9+.-]{1,20})://(?P<user>" + _URL_CHAR + r"*):"
    r"(?!\$)(?!(?P=user)@)(?!" + _URL_PLACEHOLDER + r")(?P<value>" + _URL_CHAR + r"{4,200})@(?=[A-Za-z0-9\[_%-])")
"""A password in a URL's authority (`postgres://backup:hunter2…@db`, `redis://:…@`, `https://u:…@`).
Not a password: fewer than 4 characters, the user's own name (`guest:guest@`, a known default),
`$VAR`/`${VAR}`, `<password>`, `{{pw}}`, `****`, `xxx`, `...`, and a placeholder word (letters,
with up to 3 digits after, holding `pass`, `secret`, `pwd`, `pw`, `token` or `key`: `password`,
`PASS`, `mysecretpassword`, `YOUR_PASSWORD`, `pass123`, `a%20secret`; or `changeme`, `example`,
`test`, `foo`). Measured: 0 matches in skills/, docs/ and tests/fixtures/, 1 in the 18,854 .py/.md/
.rst/.txt files of the venv's site-packages (fsspec's `github://org:repo@sha`, not a password)."""

SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("openai-style key", re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}")),
    ("AWS access key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("AWS secret key", re.compile(
        r"(?i)\baws[\w .-]{0,20}?(?:secret|private)[\w .-]{0,20}?\\?['\"]?[ \t]*(?:[:=]|\bis\b)[ \t]*\\?['\"]?"
        r"(?P<value>(?-i:[A-Za-z0-9/+]{40}))(?![A-Za-z0-9/+=])")),
    ("GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("GitHub fine-grained token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{30,}")),
    ("GitLab token", re.compile(r"\bgl(?:pat|ptt|rt)-[A-Za-z0-9_-]{20,}")),
    ("Stripe key", re.compile(r"\b(?:sk|rk|whsec)_(?:test|live|prod)_[A-Za-z0-9]{10,}")),
    ("npm token", re.compile(r"\bnpm_[A-Za-z0-9]{36,}\b")),
    ("Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("private key", re.compile(r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY-----")),
    (URL_LABEL, URL_PASSWORD),
)
"""Distinctive shapes: a match is a secret at any strictness."""

_PREFIX = re.compile(r"(?:sk-(?:proj-|ant-)?|gh[pousr]_|github_pat_|gl(?:pat|ptt|rt)-|(?:sk|rk|whsec)_(?:test|live|prod)_|"
                     r"npm_|hf_|xox[abprs]-|AKIA|ASIA|AIza)")
_CHUNK = re.compile(r"[A-Za-z0-9_+/=-]{4,}")
_SPLIT = re.compile(r"(\s+)")
_EDGE = "`'\"()[]<>"


def _token_like(core: str) -> bool:
    """A piece of a token: 4+ token characters with a letter and a digit, or a vendor prefix."""
    return bool(_CHUNK.fullmatch(core)) and (
        (any(c.isalpha() for c in core) and any(c.isdigit() for c in core)) or bool(_PREFIX.fullmatch(core)))


def _joined(text: str) -> tuple[str, list[int]]:
    """`joined_tokens(text)`, and for each of its characters its index in `text`."""
    parts = _SPLIT.split(text)
    out, where, at = [parts[0]], list(range(len(parts[0]))), len(parts[0])
    for i in range(1, len(parts) - 1, 2):
        left, gap, right = parts[i - 1], parts[i], parts[i + 1]
        core_l, core_r = left.lstrip(_EDGE), right.rstrip(_EDGE)
        join = gap.count("\n") <= 1 and bool(core_l) and bool(core_r) and _token_like(core_l) and _token_like(core_r)
        if not join:
            out.append(gap)
            where += range(at, at + len(gap))
        at += len(gap)
        out.append(right)
        where += range(at, at + len(right))
        at += len(right)
    return "".join(out), where


def joined_tokens(text: str) -> str:
    """`text` with the whitespace (at most one line break) between two token-like pieces taken out."""
    return _joined(text)[0]


def split_secrets(text: str) -> list[tuple[int, int, str]]:
    """(start, end, label) in `text` of each secret shape that only its `joined_tokens` form shows
    (a key cut into chunks by spaces): the span runs from the first chunk to the last."""
    return _split_secrets(text, {(m.start(), m.end()) for _, _, m in shape_matches(Folded(text), SECRET_PATTERNS)})


_TOKEN_PART = re.compile(
    rf"(?<!\S)(?P<lead>[{re.escape(_EDGE)}]*)(?P<core>(?=[A-Za-z0-9_+/=-]*[0-9])(?=[A-Za-z0-9_+/=-]*[A-Za-z])"
    rf"[A-Za-z0-9_+/=-]{{4,}}|(?=[A-Za-z0-9_+/=-]{{4}})(?:{_PREFIX.pattern}))(?P<trail>[{re.escape(_EDGE)}]*)(?!\S)")
"""A whitespace-delimited piece that is `_token_like` once its edge characters are stripped: what
`_joined` may join, found in one pass (`_join_gaps`) instead of a Python test of every word."""
_GAP = re.compile(r"\s+")


def _join_gaps(text: str) -> list[tuple[int, int]]:
    """(start, end) of each whitespace gap `_joined` takes out: at most one line break, between a
    token-like piece with no trailing edge and one with no leading edge (the same test, in one regex)."""
    gaps, prev = [], None
    for m in _TOKEN_PART.finditer(text):
        if prev is not None and not prev.group("trail") and not m.group("lead") \
                and _GAP.fullmatch(text, prev.end(), m.start()) and text.count("\n", prev.end(), m.start()) <= 1:
            gaps.append((prev.end(), m.start()))
        prev = m
    return gaps


def _split_secrets(text: str, whole: set[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """`split_secrets`, given the spans of the shapes found in `text` itself."""
    gaps = _join_gaps(text)
    if not gaps:
        return []
    pieces, at, at_joined, removed = [], 0, [], [0]
    for start, end in gaps:
        pieces.append(text[at:start])
        at_joined.append(start - removed[-1])  # where the gap was, in the joined text
        removed.append(removed[-1] + end - start)
        at = end
    pieces.append(text[at:])
    joined = "".join(pieces)

    def where(j: int) -> int:  # the index in `text` of the joined text's character j
        return j + removed[bisect.bisect_right(at_joined, j)]

    out = []
    for label, _, m in shape_matches(Folded(joined), SECRET_PATTERNS):
        span = (where(m.start()), where(m.end() - 1) + 1)
        if span not in whole:
            out.append((*span, label))
    return out


CREDENTIAL_LABEL = "credential assignment"
_WORD = r"(?i:pass(?:wor)?d|passwd|passphrase|pwd|secret|api[_-]?key|access[_-]?key|private[_-]?key|token)|_KEY|(?:(?<![a-z])(?:pass|PASS|pw|PW)|Pass|Pw)(?![\w.-])"
_KEY_NAME = r"[A-Za-z0-9_.-]{0,40}?(?:" + _WORD + r")(?:(?:[_.-]|(?=[A-Z0-9]))[A-Za-z0-9_.-]{0,40})?"
_KEY = r"(?<![A-Za-z0-9_.-])(?P<key>" + _KEY_NAME + ")"
_BARE = r"[^\s'\"`<>,;&|(){}\[\]\\]"
_VALUE = (r"(?P<value>\\?\"[^\"\n]{1,200}?\\?\"|\\?'[^'\n]{1,200}?\\?'|"
          rf"{_BARE}+(?:[,;&|]+(?![A-Za-z_][\w.-]*=){_BARE}+)*)")
"""A quoted value, or a bare one up to whitespace, a quote or a bracket: `,;&|` inside it belong to it
(`Tr0ub4dor&3Xq`), at its end or before another `name=` (a URL's `&user=bob`) they end it."""
CREDENTIAL_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(_KEY + r"\\?['\"]?(?:[ \t]*(?::=|=>|[:=])[ \t]*|[ \t]+is[ \t]+)" + _VALUE),
    re.compile(r"(?<![\w-])--(?P<key>[A-Za-z0-9-]{0,40}?(?:" + _WORD + r")(?:-[A-Za-z0-9-]{0,40})?)[ \t]+" + _VALUE),
    re.compile(r"(?P<key>(?:密码|口令|密钥|私钥|令牌|通行码|支付码|パスワード|暗証番号))[ \t]*(?:[:：=]|是|为|為|は)[ \t]*"
               r"(?P<value>[^\s，。；、,;!?！？）)」』\"'“”]{1,120})"),
)
"""Key, separator, value; `credential_value` decides whether the value is one."""
_KEY_FULL = re.compile(_KEY_NAME)

_DESCRIPTIVE = frozenset({
    "count", "type", "url", "uri", "endpoint", "name", "file", "path", "length", "len", "limit", "id",
    "expires", "expiry", "expiration", "ttl", "hint", "policy", "prompt", "field", "label", "env", "var",
    "header", "param", "format", "size", "required", "rotation", "min", "max", "reset", "strength",
    "manager", "store", "vault", "location", "help", "usage", "input", "validation", "rules", "tokens",
})
PLACEHOLDERS = frozenset({
    "changeme", "change-me", "change_me", "password", "passwd", "secret", "token", "apikey", "api_key",
    "none", "null", "nil", "true", "false", "undefined", "empty", "redacted", "hidden", "masked",
    "placeholder", "example", "sample", "dummy", "test", "todo", "tbd", "bearer", "basic", "required",
    "optional", "string", "str", "env", "default", "prompt",
})
COMMON_WORDS = frozenset("""
a an the is are was be been not no yes it its this that these those there here what which who how
to of in on at for from by with as or and but if then than so too very also still just only now
ask asked asking user users you your my our their his her them him me we us they
keep kept safe never always do does did don't doesn't wrong incorrect invalid correct right
expired expiring required missing empty set unset stored saved changed reset rotated leaked valid
known unknown shown sent used needed optional same different below above ok okay fine good bad weak
strong new old case sensitive encrypted hashed protected private public secret secure insecure
provided given stored accepted rejected denied blocked locked disabled enabled active inactive
available unavailable incorrectly correctly please see read use get send find check enter type
""".split())
_PLACEHOLDER_SHAPE = re.compile(
    r"^(?:[*x•.#_-]{2,}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_]+%|\{\{.*\}\}|<.*>|\[.*\]?|\.\.\.|…)$"
    r"|^[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]$|^[A-Za-z_]+(?:\.[A-Za-z_][A-Za-z0-9_]*)+$|^(?i:your|my|the|some|insert|enter|replace)[-_ ]|(?i:[-_ ]here)$")
_SYMBOL = re.compile(r"[!@#$%^&*+/=?~:]")


def _segments(key: str) -> list[str]:
    return [s.lower() for s in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)]


def describes(key: str) -> bool:
    """A key name about a credential rather than one: `token_type`, `password_hint`, `secretName`."""
    parts = _segments(key)
    return bool(parts) and parts[-1] in _DESCRIPTIVE


def credential_value(value: str, *, strict: bool) -> bool:
    """Whether `value` (quotes included, as matched) is a credential at this strictness."""
    v = value.strip()
    if len(v) >= 2 and v[-1] in "'\"" and v.lstrip("\\")[:1] == v[-1]:
        v = v.lstrip("\\")[1:-1].rstrip("\\").strip()
    if not v or not any(c.isalnum() for c in v) or _PLACEHOLDER_SHAPE.search(v):
        return False
    low = v.lower()
    if low in PLACEHOLDERS or (v.isalpha() and low in COMMON_WORDS):
        return False
    if not strict:
        return not (" " in v and all(w.lower() in COMMON_WORDS for w in v.split()))
    if len(v) < 8 or any(c.isspace() for c in v):
        return False
    letters = any(c.isalpha() for c in v)
    mixed = any(c.islower() for c in v) and any(c.isupper() for c in v)
    return letters and (any(c.isdigit() for c in v) or bool(_SYMBOL.search(v)) or (mixed and len(v) >= 20))


_NOT_SECRET = frozenset({"cache", "idempotency", "partition", "primary", "foreign", "unique", "sort", "dedup",
                         "lookup", "shard", "routing", "row", "object", "public", "fingerprint"})
"""Words in a key name (`CACHE_KEY`, `idempotencyKey`), or before it (`PRIMARY KEY`), that make it a
key of a table, a cache or a queue, or a public one, not a credential."""
_SAYS_SECRET = re.compile(r"(?i)secret|pass|pwd|token|private|api|auth|credential|access|sign")
_WORD_BEFORE = re.compile(r"(?i)(?<![A-Za-z0-9_])([A-Za-z]+)[ \t]+$")
_ID_LIKE = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}|[0-9a-fA-F]{40}|[0-9a-fA-F]{64}|[a-z]+[0-9]*(?:_[a-z]+[0-9]*)+")


def not_a_credential(key: str, value: str, before: str) -> bool:
    """An assignment that only looks like a credential's: a key named for a table, a cache or a
    public key (`_NOT_SECRET`, in the name or the word `before` it), a UUID, a path (a `/` and no `+`,
    with `-_.~` or no upper case: not base64), a SHA-1/SHA-256 or git commit hex digest (exactly 40
    or 64 hex digits) or snake-case words (`dbbackup_v2_daily`), each only when the name says nothing
    of a secret (`_SAYS_SECRET`); and a rooted path (`/run/secrets/db`, `./`, `~/`) under any name."""
    v = value.strip().strip("\\").strip("'\"")
    says_secret = _SAYS_SECRET.search(key) is not None
    words = set(_segments(key)) | {w.lower() for w in _WORD_BEFORE.findall(before[-30:])}
    path = "/" in v and "+" not in v and (any(c in v for c in "-_.~") or not any(c.isupper() for c in v))
    if path and v.startswith(("/", "./", "../", "~/")):
        return True
    return not says_secret and (bool(words & _NOT_SECRET) or path or _ID_LIKE.fullmatch(v) is not None)


def credential_ok(m: re.Match[str], *, strict: bool) -> bool:
    """Whether a match of a CREDENTIAL_PATTERNS pattern is a credential at this strictness."""
    if m.string[m.end():m.end() + 1] in ("(", "["):  # `API_KEY = get_key()`, `= os.environ["X"]`: code
        return False
    short = _segments(m.group("key"))[-1:] == ["pass"]  # `DB_PASS=x`: strict; a bare PASS before a test id or after `--- ` is a result
    return not describes(m.group("key")) and credential_value(m.group("value"), strict=strict or short) and not (short and m.group(
        "key").lower() == "pass" and (re.search(r"/|::", m.group("value")) or m.string[:m.start()].endswith(("--- ", "=== ")))) \
        and not not_a_credential(m.group("key"), m.group("value"), m.string[max(0, m.start() - 30):m.start()])


def credential_matches(text: str, *, strict: bool) -> Iterator[re.Match[str]]:
    """Credential assignments in `text` whose value counts at this strictness (non-overlapping per
    pattern; the key and value are the match's `key` and `value` groups)."""
    return _credential_matches(Folded(text), strict=strict)


def _credential_matches(ft: Folded, *, strict: bool) -> Iterator[re.Match[str]]:
    for index, pattern in enumerate(CREDENTIAL_PATTERNS):
        starts = key_starts(ft, index)
        found = pattern.finditer(ft.text) if starts is None else matches(pattern, ft.text, starts)
        yield from (m for m in found if credential_ok(m, strict=strict))


def is_credential_key(key: str) -> bool:
    """A JSON/YAML key name that holds a credential (`password`, `DB_PASSWORD`, `apiKey`)."""
    return _KEY_FULL.fullmatch(key.strip().lstrip("-")) is not None and not describes(key)


GENERIC_LABEL = "high-entropy key assignment"
_GENERIC_WORD = r"(?i:key|token|secret|passw(?:or)?d|passwd|credentials?|auth)"
GENERIC_PATTERN = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z0-9_.-]{0,40}?" + _GENERIC_WORD + r"[A-Za-z0-9_.-]{0,40}?)"
    r"\\?['\"]?(?:[ \t]*(?::=|=>|[:=])[ \t]*)(?P<value>(?P<q>\\?['\"]?)[A-Za-z0-9+/_-]{20,400}={0,2}(?P=q))"
    r"(?![A-Za-z0-9+/=_.-])")
"""A key whose name holds key/token/secret/password/credential/auth, a separator, and a bare or quoted
base64/hex value of 20+ characters; `high_entropy` decides whether the value is one."""
MIN_PIECE = 3.5
"""Average length of a value's runs (a capitalised word, a lower-case run, an upper-case run, digits)
from which it reads as a name: random base64 or hex averages about 2, `PKCS12PrivateKeyTypes` 4.2."""
_HASHED = frozenset({"sha1", "sha256", "sha384", "sha512", "md5", "hash", "digest", "checksum", "fingerprint"})
"""A key name ending in one of these holds a hash of a key (`key_sha256`), not the key."""
MIN_BITS_HEX = 3.0
MIN_BITS = 3.7
"""Shannon entropy per character a value needs: 40 random hex digits have about 3.7 bits, random
base64 about 5; `xxxx…`, `aaaa…1111` and words stay far below."""


def entropy(value: str) -> float:
    """Shannon entropy of `value` in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def high_entropy(value: str) -> bool:
    """A base64 or hex value that looks random: letters and digits mixed, no placeholder shape, not
    an identifier of words (`some_module_name_here`, `AuthenticationMiddleware`), and at least
    MIN_BITS_HEX (hex) or MIN_BITS (other) bits of entropy per character."""
    v = value.strip().strip("\\").strip("'\"").rstrip("=")
    if len(v) < 20 or _PLACEHOLDER_SHAPE.search(v) or v.lower() in PLACEHOLDERS:
        return False
    if not (any(c.isdigit() for c in v) and any(c.isalpha() for c in v)):
        return False
    pieces = re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", v)
    if sum(map(len, pieces)) >= MIN_PIECE * len(pieces):
        return False  # long runs of one case or of digits: a name (`PKCS12PrivateKeyTypes`, `max_tokens_per_1_minute`)
    hexy = re.fullmatch(r"[0-9a-fA-F]+", v) is not None
    return entropy(v) >= (MIN_BITS_HEX if hexy else MIN_BITS)


def generic_matches(text: str) -> Iterator[re.Match[str]]:
    """High-entropy key assignments in `text` (`GENERIC_PATTERN` whose value is `high_entropy`)."""
    return _generic_matches(Folded(text))


def _generic_matches(ft: Folded) -> Iterator[re.Match[str]]:
    text = ft.text
    starts = key_starts(ft, -1)
    for m in GENERIC_PATTERN.finditer(text) if starts is None else matches(GENERIC_PATTERN, text, starts):
        last = _segments(m.group("key"))[-1:]
        if text[m.end():m.end() + 1] not in ("(", "[") and not describes(m.group("key")) \
                and not set(last) & _HASHED and high_entropy(m.group("value")) \
                and not not_a_credential(m.group("key"), m.group("value"), text[max(0, m.start() - 30):m.start()]):
            yield m


@dataclass(frozen=True)
class SecretSpan:
    """One secret in a text: where, what kind, and what may be shown of it: `key` (an assignment's key
    name, or the text before a URL's password) or `prefix` (the match up to its value, a token's
    first characters), never the value."""

    start: int
    end: int
    label: str
    key: str | None
    prefix: str


def secret_spans(text: str) -> list[SecretSpan]:
    """Every secret in `text` (as a reader sees it): token shapes, a token split by spaces, the strict
    credential assignment, the high-entropy key assignment and every other shape the redaction reads
    (rules/redact.secret_shapes), in order; one overlapping an earlier one is not named twice."""
    ft = Folded(text)
    found: list[SecretSpan] = []
    for label, pattern, m in (shapes := list(shape_matches(ft, SECRET_PATTERNS))):
        has_value = "value" in pattern.groupindex
        key = text[m.start():m.start("value")].rstrip(" \t:='\"\\") if has_value else None
        prefix = m.group(0)[:m.start("value") - m.start()] if has_value else m.group(0)
        found.append(SecretSpan(m.start(), m.end(), label, key, prefix))
    for start, end, label in _split_secrets(text, {(m.start(), m.end()) for _, _, m in shapes}):
        found.append(SecretSpan(start, end, f"{label} (split)", None, joined_tokens(text[start:end])))
    for m in _credential_matches(ft, strict=True):
        found.append(SecretSpan(m.start(), m.end(), CREDENTIAL_LABEL, m.group("key"), m.group("key") + "="))
    for m in _generic_matches(ft):
        found.append(SecretSpan(m.start(), m.end(), GENERIC_LABEL, m.group("key"), m.group("key") + "="))
    from skillforge.rules.redact import secret_shapes  # the redaction's shapes (a JWT, base64 user:pass: QA 45 F1)
    found += [SecretSpan(a, b, k, s.strip(" \t\r\n:='\"\\") if k == CREDENTIAL_LABEL else None, s) for a, b, k, s in secret_shapes(text)]
    starts: list[int] = []  # the kept spans never overlap, so sorted by start they are sorted by end too
    ends: list[int] = []
    kept: list[SecretSpan] = []
    for item in found:  # token shapes first: an assignment holding the same value is not named again
        i = bisect.bisect_left(starts, item.end)  # kept spans before i start before this one ends
        if i and ends[i - 1] > item.start:
            continue
        starts.insert(i, item.start)
        ends.insert(i, item.end)
        kept.append(item)
    return sorted(kept, key=lambda s: (s.start, s.end))
