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

Views (`view_findings`): the same rules read the text as a reader would decode it, and what they find
there is redacted in the original: each character with its compatibility form (NFKC: full-width
`ＰＧＰＡＳＳＷＯＲＤ＝…`), percent-decoded (`password%3D…`), and a base64 blob (16+ characters) that
decodes to printable text holding a secret shape or a `user:password` pair is replaced whole. Only a
finding that covers a character the view changed counts, so plain ASCII text redacts exactly as before.
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from collections.abc import Callable, Iterable

from skillforge.rules.secrets import credential_value, describes, high_entropy, not_a_credential

AWS_ID_CHUNKED = re.compile(r"\b(?:AKIA|ASIA)(?:[ \t-]?[0-9A-Z]){16}(?![0-9A-Za-z])")


def aws_id_chunked(m: re.Match[str]) -> bool:
    """A chunked key id: a separator inside it and a digit among its 16 characters."""
    body = m.group(0)[4:]
    return any(c in " \t-" for c in body) and any(c.isdigit() for c in body)


AWS_SECRET_SPACED = re.compile(
    r"(?i)\baws[\w .-]{0,20}?(?:secret|private)[\w .-]{0,20}?\\?['\"]?[ \t]+"
    r"(?P<value>(?-i:[A-Za-z0-9/+]{40}))(?![A-Za-z0-9/+=])")
_SPACED_WORD = r"(?i:key|token|secret|passw(?:or)?d|passwd|credentials?|auth)"
SPACED_KEY = re.compile(
    r"(?<![A-Za-z0-9_.-])(?P<key>[A-Za-z0-9_.-]{0,40}?" + _SPACED_WORD + r"[A-Za-z0-9_.-]{0,40}?)\\?['\"]?[ \t]+"
    r"(?:(?i:is)[ \t]+)?(?P<value>[A-Za-z0-9+/_-]{20,400}={0,2})(?![A-Za-z0-9+/=_.-])")
_HASHED = frozenset({"sha1", "sha256", "sha384", "sha512", "md5", "hash", "digest", "checksum", "fingerprint"})


def spaced_key_ok(m: re.Match[str]) -> bool:
    """The leak scan's high-entropy assignment test, for a key and value separated by white space."""
    key, value = m.group("key"), m.group("value")
    last = re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", key)[-1:]
    return (not describes(key) and not {s.lower() for s in last} & _HASHED and high_entropy(value)
            and not not_a_credential(key, value, m.string[max(0, m.start() - 30):m.start()]))


CURL_USER = re.compile(r"(?<![\w-])(?:-u|--user|--proxy-user)(?:[ \t]+|=)(?P<q>['\"]?)(?P<user>[^\s:'\"]{1,64}):"
                       r"(?P<value>[^\s'\"]{1,200})(?P=q)")


def curl_user_ok(m: re.Match[str]) -> bool:
    user, value = m.group("user"), m.group("value")
    if value == user or (user.isdigit() and value.isdigit()):
        return False  # `-u www-data:www-data`, `docker run -u 1000:1000`
    return credential_value(value, strict=False)


MYSQL_P = re.compile(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mariadb|mariadb-dump)\b"
                     r"[^\n|;&]{0,200}?(?<=[ \t])-p(?P<value>[^\s'\"-][^\s'\"]*)")

Check = Callable[[re.Match[str]], bool]
CLI_PASSWORD_KINDS: tuple[tuple[str, re.Pattern[str], Check | None], ...] = (
    ("cli-password", CURL_USER, curl_user_ok),
    ("cli-password", MYSQL_P, lambda m: credential_value(m.group("value"), strict=False)),
)

_PERCENT = re.compile(r"%([2-7][0-9A-Fa-f])")
B64_BLOB = re.compile(r"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=_-])")
_USER_PASS = re.compile(r"[\w.@+-]{1,64}:(?P<value>[^\s:]{4,200})")
Kinds = Iterable[tuple[str, re.Pattern[str], Check | None]]


def _segments_nfkc(text: str) -> list[tuple[int, int, str]]:
    return [(i, i + 1, unicodedata.normalize("NFKC", c) if ord(c) > 127 else c) for i, c in enumerate(text)]


def _segments_percent(text: str) -> list[tuple[int, int, str]]:
    out: list[tuple[int, int, str]] = []
    at = 0
    for m in _PERCENT.finditer(text):
        out += [(i, i + 1, text[i]) for i in range(at, m.start())]
        out.append((m.start(), m.end(), chr(int(m.group(1), 16))))
        at = m.end()
    return out + [(i, i + 1, text[i]) for i in range(at, len(text))]


def _in_view(text: str, segments: list[tuple[int, int, str]], kinds: Kinds) -> list[tuple[int, int, str]]:
    """(start, end, kind) in `text` of each match in the view `segments` builds that covers a changed character."""
    view, owner = [], []
    for n, (start, end, shown) in enumerate(segments):
        view.append(shown)
        owner += [n] * len(shown)
    joined = "".join(view)
    changed = [text[start:end] != shown for start, end, shown in segments]
    out: list[tuple[int, int, str]] = []
    for kind, pattern, check in kinds:
        for m in pattern.finditer(joined):
            if check is not None and not check(m):
                continue
            a, b = (m.start("value"), m.end("value")) if "value" in pattern.groupindex else (m.start(), m.end())
            if b <= a:
                continue
            first, last = owner[a], owner[b - 1]
            if any(changed[first:last + 1]) or any(changed[owner[m.start()]:owner[m.end() - 1] + 1]):
                out.append((segments[first][0], segments[last][1], kind))
    return out


def _decoded(blob: str) -> str | None:
    try:
        raw = base64.b64decode(blob + "=" * (-len(blob.rstrip("=")) % 4), validate=False)
        out = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return out if out and all(c.isprintable() or c in "\n\t\r" for c in out) else None


def view_findings(text: str, kinds: Kinds) -> list[tuple[int, int, str]]:
    """(start, end, kind) in `text` of the secrets only a decoded view shows (see the module's
    docstring), not overlapping one another, in order."""
    kinds = [k for k in kinds if k[0] not in ("email", "phone")]
    found: list[tuple[int, int, str]] = []
    if not text.isascii() and not unicodedata.is_normalized("NFKC", text):
        found += _in_view(text, _segments_nfkc(text), kinds)
    if "%" in text and _PERCENT.search(text):
        found += _in_view(text, _segments_percent(text), kinds)
    for m in B64_BLOB.finditer(text):
        plain = _decoded(m.group(0))
        if plain is None:
            continue
        pair = _USER_PASS.fullmatch(plain.strip())
        if (pair and credential_value(pair.group("value"), strict=True)) or any(
                (check is None or check(x)) for _, p, check in kinds for x in p.finditer(plain)):
            found.append((m.start(), m.end(), "base64-credential"))
    kept: list[tuple[int, int, str]] = []
    for start, end, kind in sorted(found):
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, kind))
    return kept
