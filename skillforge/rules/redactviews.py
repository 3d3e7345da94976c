"""Secret shapes that only session redaction reads (pure, no I/O): rules/redact.py applies them to
harvested text and to every case text a proposer sees (rules/casetext.for_proposer); the patch leak
scan (rules/secrets.py) does not.

Shapes (QA 22 TRUST-4):
- an AWS access key id cut into chunks (`AKIA IOSF ODNN 7EXA MPLE`): AKIA/ASIA and exactly 16 upper-case
  letters or digits, single spaces or dashes between them, a digit among them (so upper-case prose
  such as "ASIA PACIFIC …" is not one). The general join of chunked tokens stays a proposer-only rule;
- a key name and its value separated only by white space: `AWS_SECRET_ACCESS_KEY wJalr…` (40
  characters after an aws…secret name), and a key named key/token/secret/password/credential/auth
  followed by a value that passes the leak scan's high-entropy assignment test (`secret wJalr…`); the
  same exclusions as the leak scan (a name that describes, a hash, an identifier, a git hash under a
  name that says nothing of a secret). A bare 40-character value with no key name is not redacted;
- command-line passwords: `curl -u user:pass` / `--user` / `--proxy-user` (not `uid:gid`, not
  `name:name`), `mysql -pSECRET` (the password glued to `-p`, for the MySQL/MariaDB clients).
QA 25: the white space between a key name and its value may hold line breaks (or a JSON-escaped `\n`),
`-uUSER:PW` needs no space, `mysql -p'…'` may be quoted, and `sshpass -p …` counts.
redact32: an e-mail address written out (`jane[at]example[dot]com`, `jane dot doe at example dot com`:
OBFUSCATED_EMAIL), a credential word written apart (`pass word is …`, `pass-word:`: a view), percent-
encoding up to PERCENT_ROUNDS (8) rounds, and a vendor token in even chunks of 2-4 (`sk-proj- abc 1de …`).

Views (`view_findings`): the same rules read the text as a reader would decode it, and what they find
there is redacted in the original: each character with its compatibility form (NFKC: full-width
`ＰＧＰＡＳＳＷＯＲＤ＝…`) and format characters (Cf: a zero-width space) left out, percent-decoded up to
PERCENT_ROUNDS times (`password%253D…`), the joiners after a vendor prefix taken out (`prefix_join`), the
space or hyphen inside a credential word written apart (`pass word`),
and a base64 or base64url blob (16+ characters) or a hex one that decodes to printable text holding a
secret shape or a `user:password` pair is replaced whole. Only a
finding that covers a character the view changed counts, so plain ASCII text redacts exactly as before.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterable

from skillforge.rules.secrets import _KEY, _VALUE, COMMON_WORDS, credential_ok, credential_value, describes, high_entropy, not_a_credential

AWS_ID_CHUNKED = re.compile(r"\b(?:AKIA|ASIA)(?:[ \t.-]?[0-9A-Z]){16}(?![0-9A-Za-z])")


def aws_id_chunked(m: re.Match[str]) -> bool:
    """A chunked key id: a separator inside it and a digit among its 16 characters."""
    body = m.group(0)[4:]
    return any(c in " \t.-" for c in body) and any(c.isdigit() for c in body)


_GAP = r"(?:[ \t]|\r?\n|\r|\\[nrt]){1,8}"
"""White space between a key name and its value: spaces, tabs, up to a few line breaks (the value on
the next line), or a JSON-escaped line break (the --edit check reads JSON text)."""
AWS_SECRET_SPACED = re.compile(
    r"(?i)\baws[\w .-]{0,20}?(?:secret|private)[\w .-]{0,20}?\\?['\"]?(?:[ \t]*[:=])?" + _GAP +
    r"(?P<value>(?-i:[A-Za-z0-9/+]{40}))(?![A-Za-z0-9/+=])")
_SPACED_WORD = r"(?i:key|token|secret|passw(?:or)?d|passwd|credentials?|auth)"
SPACED_KEY = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z0-9_.-]{0,40}?" + _SPACED_WORD + r"[A-Za-z0-9_.-]{0,40}?)\\?['\"]?(?:[ \t]*[:=])?" + _GAP +
    r"(?:(?i:is)[ \t]+)?(?P<value>[A-Za-z0-9+/_-]{20,400}={0,2})(?![A-Za-z0-9+/=_.-])")
_HASHED = frozenset({"sha1", "sha256", "sha384", "sha512", "md5", "hash", "digest", "checksum", "fingerprint"})


def spaced_key_ok(m: re.Match[str]) -> bool:
    """The leak scan's high-entropy assignment test, for a key and value separated by white space."""
    key, value = m.group("key"), m.group("value")
    last = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)[-1:]
    return (not describes(key) and not {s.lower() for s in last} & _HASHED and high_entropy(value)
            and not not_a_credential(key, value, m.string[max(0, m.start() - 30):m.start()]))


CREDENTIAL_SPACED = re.compile(_KEY + r"\\?['\"]?(?P<sep>[ \t]*(?::=|=>|[:=]))?(?P<gap>" + _GAP + ")" + _VALUE)
"""QA 27 T1: an explicit credential name (password, passwd, pwd, secret, token, api_key, DB_PASSWORD, …)
and its value across white space the one-line credential assignment does not take: a line break
(`password:\nXk9Q…`, CRLF, CR, a blank line, a JSON-escaped `\n`) or only a space (`password Xk9Q…`)."""
_LINE_END = re.compile(r"[ \t]*(?:$|[\r\n]|\\[nr]|\\?[\"'])")


def spaced_credential_ok(m: re.Match[str], *, strict: bool = False) -> bool:
    """The one-line credential assignment's value test (`credential_ok`) for CREDENTIAL_SPACED, where
    that assignment does not reach: after a `:`/`=` and a line break, lenient (any value not a
    placeholder or a common word) when the value is alone on its line, else strict (8+ characters, a
    letter and a digit or symbol); with no `:`/`=` (`password Xk9Q…`, `DB_PASSWORD\nXk9Q…`) strict
    and a digit among letters. Prose stays: `password:\nThe user forgot it`, `Reset your password\nClick
    the link`, `you pass yourself**`, a grammar's `pass_stmt: 'pass'\nflow_stmt:`, `$TOKEN https://…`.
    `strict`: the publish scan's level (never lenient)."""
    value = m.group("value").strip("\\'\"")
    if m.string[max(0, m.start() - 1):m.start()] in ("$", "{", "%") or "://" in value or value.endswith(":"):
        return False
    gap, sep = m.group("gap"), m.group("sep") is not None
    broken = any(c in gap for c in "\r\n") or "\\n" in gap or "\\r" in gap
    if sep and not broken:
        return False  # the one-line assignment's own case (secrets.CREDENTIAL_PATTERNS)
    if not sep and (m.group("key").lower() == "pass" or not any(c.isdigit() for c in value)
                    or not any(c.isalpha() for c in value)):
        return False
    alone = _LINE_END.match(m.string, m.end()) is not None
    return credential_ok(m, strict=strict or not (sep and alone))


CURL_USER = re.compile(r"(?<![\w-])(?:-u(?:[ \t]+|=)?|--user(?:[ \t]+|=)|--proxy-user(?:[ \t]+|=))(?P<q>['\"]?)(?P<user>[^\s:'\"]{1,64}):"
                       r"(?P<value>[^\s'\"]{1,200})(?P=q)")


def curl_user_ok(m: re.Match[str]) -> bool:
    user, value = m.group("user"), m.group("value")
    if value == user or (user.isdigit() and value.isdigit()):
        return False  # `-u www-data:www-data`, `docker run -u 1000:1000`
    return credential_value(value, strict=False)


_QUOTED = r"'[^'\n]{1,200}'|\"[^\"\n]{1,200}\"|\\\"[^\"\n]{1,200}?\\\""
MYSQL_P = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)\b"
                     r"[^\n|;&]{0,200}?(?<=[ \t])-p(?P<value>" + _QUOTED + r"|[^\s'\"-][^\s'\"]*)")
SSHPASS_P = re.compile(r"\bsshpass\b[^\n|;&]{0,40}?(?<=[ \t])-p[ \t]*(?P<value>" + _QUOTED + r"|[^\s'\"-][^\s'\"]*)")

Check = Callable[[re.Match[str]], bool]
CLI_PASSWORD_KINDS: tuple[tuple[str, re.Pattern[str], Check | None], ...] = (
    ("cli-password", CURL_USER, curl_user_ok),
    ("cli-password", MYSQL_P, lambda m: credential_value(m.group("value"), strict=False)),
    ("cli-password", SSHPASS_P, lambda m: credential_value(m.group("value"), strict=False)),
)
CLI_PASSWORDS = (CURL_USER, MYSQL_P, SSHPASS_P)
"""What the publish scan also reads (with the strict value test): curl -u, mysql -p, sshpass -p."""

_BR_AT = r"[ \t]*[\[({<][ \t]*(?i:at)[ \t]*[\])}>][ \t]*"
_BR_DOT = r"[ \t]*[\[({<][ \t]*(?i:dot)[ \t]*[\])}>][ \t]*"
_AT = rf"(?:{_BR_AT}|[ \t]+(?:at|AT)[ \t]+)"
_DOT = rf"(?:{_BR_DOT}|[ \t]+(?:dot|DOT)[ \t]+|\.)"
_TLDS = ("com|net|org|edu|gov|mil|int|io|co|ai|dev|app|info|biz|me|us|uk|de|fr|cn|jp|ru|in|au|ca|nl|br|it|es|"
         "ch|se|no|eu|pl|kr|tw|hk|sg")
OBFUSCATED_EMAIL = re.compile(
    r"(?<![\w.+-])(?P<local>[A-Za-z0-9][\w+-]{0,63}(?:" + _DOT + r"[A-Za-z0-9][\w+-]{0,63}){0,3})" + _AT +
    r"(?P<domain>[A-Za-z0-9][A-Za-z0-9-]{0,62}(?:" + _DOT + r"[A-Za-z0-9][A-Za-z0-9-]{0,62}){0,3})" + _DOT +
    r"(?P<tld>[A-Za-z]{2,24})(?![\w-])")
"""An e-mail address written out to dodge a parser: "jane dot doe at example dot com",
`jane[at]example[dot]com`, `jane (at) example (dot) com`, `jane AT example DOT com`."""
_NOT_A_MAILBOX = frozenset({"look", "looking", "looked", "arrive", "arrived", "visit", "hosted", "found", "online",
                            "live", "available", "published", "posted", "stay", "meet", "work", "works", "worked",
                            "go", "went", "docs", "here", "there", "point", "click"})


def obfuscated_email_ok(m: re.Match[str]) -> bool:
    """An address written out: an `at` or `dot` word in brackets, or both spelled as words with a
    top-level domain of the common ones (`look at example dot com`: the local part a common word, no)."""
    whole = m.group(0)
    bracketed = re.search(_BR_AT, whole) is not None or re.search(_BR_DOT, whole) is not None
    if "@" in whole or (not bracketed and m.group("tld").lower() not in _TLDS.split("|")):
        return False
    first = re.split(r"[^\w+-]+", m.group("local"))[0].lower()
    return bracketed or (first not in COMMON_WORDS and first not in _NOT_A_MAILBOX)


_PERCENT = re.compile(r"%([2-7][0-9A-Fa-f])")
PERCENT_ROUNDS = 8
"""Percent-decoding is repeated (`%253D` is `%3D` is `=`), at most this many times: each round is one
more reading of the text by every rule, and only while a round still decodes something, so a text
with no `%XX` costs nothing. 3 (QA 25) left a value encoded 4 times (`%2525253D`) as it was; 8 covers
what stacked encoders produce, and an unbounded loop would let `%252525…` take O(n²)."""
B64_BLOB = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/_-]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
HEX_BLOB = re.compile(r"(?<![0-9A-Za-z])(?:[0-9a-fA-F]{2}){8,}(?![0-9A-Za-z])")
_USER_PASS = re.compile(r"[\w.@+-]{1,64}:(?P<value>[^\s:]{4,200})")
_PREFIX_ONLY = (r"(?:sk-(?:proj-|ant-)?|gh[pousr]_|github_pat_|gl(?:pat|ptt|rt)-|(?:sk|rk|whsec)_(?:test|live|prod)_|"
                r"npm_|hf_|xox[abprs]-|AKIA|ASIA|AIza)")
_JOINER = r"(?:[ \t]{1,2}|\r?\n|\r|(?:\\r)?\\n|\\r|[-._])"
_PREFIXED = re.compile(r"(?<![A-Za-z0-9])" + _PREFIX_ONLY + r"(?:" + _JOINER + r"?[A-Za-z0-9]{4,})(?:" + _JOINER + r"[A-Za-z0-9]{4,})*")
"""A vendor prefix and runs of 4+ letters or digits after it (a joiner among them), joined by a space, a tab, a
line break (or a JSON-escaped one), a dash, a dot or an underscore (`ghp_ Xk9Q…`, `ghp_Xk9Q…-Zp7V…`,
`ghp_Xk9Q….Zp7V…`, `ghp_Xk9Q…\nZp7V…`): `prefix_join` decides how many runs are one token."""
_CHUNKED = re.compile(r"(?<![A-Za-z0-9])" + _PREFIX_ONLY + r"(?P<body>[ \t]?[A-Za-z0-9]{2,4}(?:[ \t][A-Za-z0-9]{2,4}){4,}(?:[ \t][A-Za-z0-9]{1,4})?)(?![A-Za-z0-9])")
"""A vendor prefix and 5+ chunks of 2-4 letters or digits (the last may be of 1), one space or tab between
them (`sk-proj-abc 1de f2g …`): `prefix_join` joins them when the chunks are of one length (the last may
be shorter) and hold a digit; whether that is a key is then the vendor's own shape."""
_GLUED = frozenset("-._")
_STEP = re.compile(r"(?P<j>" + _JOINER + r")?(?P<run>[A-Za-z0-9]{4,})")


def _run_joins(run: str, joiner: str, head: str) -> bool:
    """Whether a run after a joiner continues the token: any run after a dash, dot or underscore; after
    white space or a line break, a run holding a digit, or 10+ characters (`mnopqrstuvwx`), or after
    AKIA/ASIA upper case (`AKIA IOSF ODNN 7EXA MPLE`): not a word of prose (`Please`)."""
    return bool(joiner) and (set(joiner) <= _GLUED or any(c.isdigit() for c in run) or len(run) >= 10
                             or (head in ("AKIA", "ASIA") and run.isupper()))


def prefix_join(text: str) -> list[tuple[int, int]]:
    """(start, end) in `text` of each joiner to take out so a vendor token cut into runs reads whole:
    the one rule redaction (`view_findings`), the --edit check (rules/redact.residue) and the publish
    scan (`prefix_joined_findings`) share. Runs are joined from the prefix on while `_run_joins`
    holds, and only when the joined runs hold a digit; whether the result is a secret is then the
    vendor's own shape (`_in_view`)."""
    out: list[tuple[int, int]] = []
    for m in _PREFIXED.finditer(text):
        head = re.match(_PREFIX_ONLY, m.group(0))
        prev = m.start() + (head.end() if head else 0)  # where the last run joined ends
        gaps: list[tuple[int, int]] = []
        body = ""
        while (step := _STEP.match(text, prev, m.end())) is not None:
            if gaps and not _run_joins(step.group("run"), step.group("j") or "", head.group(0) if head else ""):
                break
            gaps.append((prev, step.start("run")))
            body += step.group("run")
            prev = step.end()
        if any(c.isdigit() for c in body):
            out += [g for g in gaps if g[1] > g[0]]
    for m in _CHUNKED.finditer(text):  # a key written in even chunks of 2-4 (`sk-proj-abc 1de f2g …`)
        chunks = m.group("body").split()
        if (all(len(c) == len(chunks[0]) for c in chunks[:-1]) and len(chunks[-1]) <= len(chunks[0])
                and any(c.isdigit() for c in m.group("body"))):
            out += [(g.start() + m.start("body"), g.end() + m.start("body")) for g in re.finditer(r"[ \t]", m.group("body"))]
    return sorted(set(out))


Kinds = Iterable[tuple[str, re.Pattern[str], Check | None]]
Chars = list[tuple[int, int, str]]
"""A view of a text: each character a reader would see, with the span of the text it comes from."""


def _chars_nfkc(text: str) -> Chars:
    """Compatibility forms (full-width), and format characters (Cf: zero-width space, joiners, bidi
    marks) left out, so `AKIA\u200bIOSF…` reads `AKIAIOSF…`."""
    out: Chars = []
    for i, c in enumerate(text):
        if ord(c) > 127 and unicodedata.category(c) != "Cf":
            out += [(i, i + 1, x) for x in unicodedata.normalize("NFKC", c)]
        elif ord(c) <= 127:
            out.append((i, i + 1, c))
    return out


def _chars_percent(chars: Chars) -> Chars | None:
    """`chars` with each %XX (printable ASCII) decoded; None when there is none."""
    view = "".join(c for _, _, c in chars)
    found = list(_PERCENT.finditer(view))
    if not found:
        return None
    out: Chars = []
    at = 0
    for m in found:
        out += chars[at:m.start()]
        out.append((chars[m.start()][0], chars[m.end() - 1][1], chr(int(m.group(1), 16))))
        at = m.end()
    return out + chars[at:]


def _chars_joined(text: str) -> Chars | None:
    """`text` with the joiners `prefix_join` finds taken out, or None when there is none."""
    drop = {i for start, end in prefix_join(text) for i in range(start, end)}
    if not drop:
        return None
    return [(i, i + 1, c) for i, c in enumerate(text) if i not in drop]


_CREDENTIAL_WORD = re.compile(r"(?i)(?<![A-Za-z])pass(?P<j>[ \t]{1,2}|[ \t]?[-_][ \t]?)(?:word|phrase)(?![a-z])")
"""A credential word written apart: "pass word", "pass-word", "pass_word", "pass phrase"."""


def _chars_credword(text: str) -> Chars | None:
    """`text` with the space or hyphen inside a credential word written apart taken out (`pass word is
    hunter2abc` reads `password is hunter2abc`), or None when there is none."""
    drop = {i for m in _CREDENTIAL_WORD.finditer(text) for i in range(m.start("j"), m.end("j"))}
    if not drop:
        return None
    return [(i, i + 1, c) for i, c in enumerate(text) if i not in drop]


def prefix_joined_findings(text: str, kinds: Kinds) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each secret `_chars_joined` shows (a vendor prefix and its runs, spaces or
    dashes between them): also read by the publish scan (rules/skillfiles.py)."""
    joined = _chars_joined(text)
    return [] if joined is None else _apart(_in_view(text, joined, kinds))


def _in_view(text: str, chars: Chars, kinds: Kinds) -> list[tuple[int, int, str]]:
    """(start, end, kind) in `text` of each match in the view `chars` that covers a changed character."""
    joined = "".join(c for _, _, c in chars)
    spans = [(s, e) for s, e, _ in chars]
    changed = [text[s:e] != c for s, e, c in chars]
    if len(joined) != len(chars):
        return []
    out: list[tuple[int, int, str]] = []
    for kind, pattern, check in kinds:
        for m in pattern.finditer(joined):
            if check is not None and not check(m):
                continue
            a, b = (m.start("value"), m.end("value")) if "value" in pattern.groupindex else (m.start(), m.end())
            if b <= a:
                continue
            if any(changed[a:b]) or any(changed[m.start():m.end()]) or _gap_inside(spans, m.start(), m.end()):
                out.append((spans[a][0], spans[b - 1][1], kind))
    return out


def _gap_inside(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    """Whether the view's characters a..b come from text with something left out between them."""
    return any(spans[i][0] != spans[i - 1][1] for i in range(a + 1, b))


def _decoded(blob: str) -> str | None:
    try:
        if HEX_BLOB.fullmatch(blob):
            raw = bytes.fromhex(blob)
        else:
            alt = b"-_" if any(c in "-_" for c in blob) else None
            raw = base64.b64decode(blob + "=" * (-len(blob.rstrip("=")) % 4), altchars=alt, validate=False)
        out = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return out if out and all(c.isprintable() or c in "\n\t\r" for c in out) else None


def view_findings(text: str, kinds: Kinds, *, nfkc: bool = True) -> list[tuple[int, int, str]]:
    """(start, end, kind) in `text` of the secrets only a decoded view shows (see the module's
    docstring), not overlapping one another, in order. `nfkc` False: `text` is already as a reader
    sees it (textnorm.visible: the patch scans), so its compatibility view is not read again."""
    kinds = [k for k in kinds if k[0] not in ("email", "phone", "cn-id")]
    found: list[tuple[int, int, str]] = []
    chars: Chars = []
    if nfkc and not text.isascii():
        chars = _chars_nfkc(text)
        found += _in_view(text, chars, kinds)
    elif "%" in text:  # each character as it is (only the percent view needs the list)
        chars = [(i, i + 1, c) for i, c in enumerate(text)]
    for _ in range(PERCENT_ROUNDS if "%" in text else 0):
        decoded = _chars_percent(chars)
        if decoded is None:
            break
        chars = decoded
        found += _in_view(text, chars, kinds)
    for view in (_chars_joined(text), _chars_credword(text)):
        if view is not None:
            found += _in_view(text, view, kinds)
    for blob in (*B64_BLOB.finditer(text), *HEX_BLOB.finditer(text)):
        plain = _decoded(blob.group(0))
        if plain is None:
            continue
        pair = _USER_PASS.fullmatch(plain.strip())
        if (pair and credential_value(pair.group("value"), strict=True)) or any(
                (check is None or check(x)) for _, p, check in kinds for x in p.finditer(plain)):
            found.append((blob.start(), blob.end(), "base64-credential"))
    return _apart(found)


def _apart(found: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """`found` in order, each finding overlapping an earlier one left out."""
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(found):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, kind))
    return kept
