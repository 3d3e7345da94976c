"""Shell commands and remote actions in a line a patch adds to a skill (pure, no I/O).

An example or instruction line that tells the agent to run `curl … | sh`, `rm -rf`, `nc <host>` or
`DROP DATABASE` changes what the skill does to the machine it runs on, however harmless the rest of
the line reads. `rules/levels.py` makes a part holding such an added line at least L2 (a person
looks), with the command in the reason; naming a tool call (`db.backup`) already is. `find_shell`
flags, in the line as written and as a reader sees it (`textnorm.visible`: full-width letters,
homoglyphs and invisible characters do not hide a command):

- a recursive delete: `rm -r`, `rm -rf`, `rm -fr`, `rm --recursive`;
- a pipe into an interpreter (`| sh`, `| sudo bash`, `| python3`), also said in words ("pipe it
  into bash");
- a network command (curl, wget, nc, ncat, netcat, ssh, scp, sftp, rsync, ftp, telnet, socat)
  aimed at a host: a URL, an IP address, `user@host`, `host:path` or a domain name;
- an IPv4/IPv6 address or a URL the live skill does not already hold (`held_targets`);
- destructive SQL and tools: `DROP DATABASE|TABLE|SCHEMA`, `dropdb`, `TRUNCATE`, `DELETE FROM`;
- `chmod 777` (or `a+rwx`), `sudo`, `mkfs`, `dd if=`;
- inline code and its disguises (`INLINE_CODE`): `bash|sh|zsh -c`, `python3 -c`, `perl|ruby|node -e`,
  `powershell|pwsh -c|-Command`, `eval "…"`, `base64 -d`, `$(curl …)`; other deletes (`rm -f`, `rm`
  with a glob, `xargs rm`, `find … -delete`, `Remove-Item -Recurse|-Force`); PowerShell downloads and
  execution (`iwr`, `Invoke-WebRequest`, `Invoke-RestMethod`, `DownloadString`, `iex`,
  `Invoke-Expression`); cloud copies (`aws s3 cp|sync|mv|rm`, `gsutil`, `gcloud storage`,
  `az storage`, `azcopy`, `rclone`, `s3cmd`). This list is a floor: the L1 vet covers the rest;
- one of the skill's own `scripts/` run with arguments (`scripts/rotate.py --all`, "run
  scripts/rotate.py with KEEP set to 0", `KEEP=0 scripts/rotate.py`).

Only lines a patch adds are read; a line the live skill holds unchanged is never a finding.
Measured on the shipped skills (skills/, tests/fixtures) and the bench skills, every line of each
read as if added: see docs/safety.md ("Shell commands").
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from skillforge.rules.textnorm import visible

RECURSIVE_RM = re.compile(r"\brm\s+(?:-{1,2}[\w-]+\s+)*?(?:-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b")
PIPE_TO_SHELL = re.compile(
    r"\|\s*(?:sudo\s+(?:-\S+\s+)*)?(?:/usr)?(?:/bin/)?(?:sh|bash|zsh|dash|ksh|fish|python[23]?(?:\.\d+)?|perl|ruby|node)\b|"
    r"\bpip(?:e|es|ed|ing)\s+(?:(?:it|that|this|the\s+\w+|them|everything)\s+)?(?:in)?to\s+(?:a\s+)?"
    r"(?:sh|bash|zsh|python[23]?|(?:the\s+)?shell)\b",
    re.IGNORECASE)
NETWORK_COMMAND = re.compile(r"(?<![\w./-])(?:curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|ftp|telnet|socat)(?![\w/-])")
URL = re.compile(r"\b(?:https?|ftps?|sftp|ssh|s3|gs|wss?|rsync|smb|tcp|udp)://[^\s<>\"'`)\]|]+", re.IGNORECASE)
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\w)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")
_USER_HOST = re.compile(r"(?<![\w.])[\w.-]+@[\w-]+(?:\.[\w-]+)*")
_HOST_PATH = re.compile(r"(?<![\w./:])[A-Za-z][\w-]*(?:\.[\w-]+)*:[/~\w]")
_DOMAIN = re.compile(r"(?<![\w@./-])(?:[A-Za-z0-9-]+\.)+([A-Za-z]{2,24})(?![\w-])")
FILE_SUFFIXES = frozenset({
    "sh", "py", "sql", "dump", "gz", "tar", "tgz", "bz2", "xz", "zst", "zip", "txt", "md", "json", "yaml",
    "yml", "csv", "log", "bak", "conf", "cfg", "ini", "js", "ts", "rb", "pl", "toml", "html", "xml", "pdf",
    "png", "jpg", "jpeg", "sqlite", "db", "env", "lock", "backup", "pem", "key", "out", "err", "tmp"})
"""A dotted name ending in one of these is a file (`backup.sh`), not a host."""
DESTRUCTIVE = re.compile(
    r"\bdrop\s+(?:database|table|schema)\b|\bdropdb\b|\bTRUNCATE\s+(?:TABLE\s+)?[\w\"`]|\btruncate\s+table\b|"
    r"\bDELETE\s+FROM\b|\bchmod\s+(?:-\w+\s+)*(?:0?777|a\+rwx)\b|\bsudo\b|\bmkfs(?:\.\w+)?\b|\bdd\s+if=",
    re.IGNORECASE)
INLINE_CODE: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (what, re.compile(pattern, re.IGNORECASE)) for what, pattern in (
    ("runs inline code", (r"(?<![\w./-])(?:/usr)?(?:/bin/)?(?:ba|z|da|k)?sh\s+(?:-[a-z]+\s+)*-[a-z]*c\b|"
     r"(?<![\w./-])(?:python[23]?(?:\.\d+)?|perl|ruby|node|deno|php)\s+(?:-\S+\s+)*?-[a-zA-Z]*[ceE]\b|"
     r"(?<![\w./-])(?:powershell(?:\.exe)?|pwsh)(?:\s+-\S+)*?\s+-(?:c|command|e|ec|enc\w*|file)\b|"
     r"(?<![\w.-])eval\s+[\"'`$(]")),
    ("decodes hidden content", (r"\bbase64\s+(?:-\w+\s+)*(?:-d|-D|--decode)\b|\bFromBase64String\b")),
    ("runs a command's output", (r"\$\(\s*(?:curl|wget|base64|iwr|irm|cat\s+\S+\s*\|)|`\s*(?:curl|wget|base64)\b")),
    ("deletes files", (r"(?<![\w./-])rm\s+(?:-[a-zA-Z]+\s+)*-[a-zA-Z]*f[a-zA-Z]*\b|"
     r"(?<![\w./-])rm\s+(?:-\S+\s+)*[^\s,;|]*\*[^\s,;|]*|\bxargs\s+(?:-\S+\s+)*(?:rm|shred|sh|bash)\b|"
     r"\bfind\s[^|;\n]*?(?:-delete\b|-exec\s+rm\b)|\bRemove-Item\b[^|;\n]*?-(?:Recurse|Force)\b|\bshred\s+-")),
    ("downloads or runs PowerShell code", (r"(?<![\w-])(?:iwr|irm|iex)(?![\w-])(?=\s|$|\))|"
     r"\b(?:Invoke-WebRequest|Invoke-RestMethod|Invoke-Expression|Start-BitsTransfer)\b|"
     r"\.Download(?:String|File|Data)\b|\bNet\.WebClient\b")),
    ("copies to or from cloud storage", (r"\baws\s+s3(?:api)?\s+(?:cp|sync|mv|rm|rb|put-object|get-object)\b|"
     r"\bgsutil\b|\bgcloud\s+storage\b|\baz\s+storage\b|\bazcopy\b|"
     r"\brclone\s+(?:copy\w*|sync|bisync|move\w*|rcat|delete\w*|purge|mount|serve)\b|\bs3cmd\b")),
))
"""Commands that run code given inline (or hidden), delete, download or copy off the host, however short."""
_UPPER_ONLY = ("TRUNCATE", "DELETE")
"""SQL words that are also ordinary English ("delete from the list"): flagged in upper case only."""
SCRIPT = re.compile(r"(?<![\w-])(?:\./)?scripts/[\w./-]*\w")
_SCRIPT_ARG = re.compile(
    r"\s+(?:-{1,2}[A-Za-z0-9]|\w+=|\$\w|\d|[\"'])|"  # scripts/rotate.py --all, KEEP=0, $DIR, 0, "x"
    r"`?\s+(?:with|using|passing|and)\s+(?:the\s+)?(?:(?:argument|flag|option|parameter)s?\s+)?[`\"']?"
    r"(?:-{1,2}[A-Za-z]|[A-Z][A-Z0-9_]{1,}\b)")  # "with --all", "with KEEP set to 0"
_ARG_REST = re.compile(r"[^\s,;]*(?:\s+(?:set\s+)?to\s+\S+)?")
_ENV_BEFORE = re.compile(r"\b[A-Z][A-Z0-9_]{1,}=\S+\s+(?:(?:python3?|bash|sh)\s+)?$")


@dataclass(frozen=True)
class ShellFinding:
    """A command in an added line: what it does and the text that showed it."""

    what: str
    match: str

    def __str__(self) -> str:
        return f"{self.what} ({self.match.strip()[:60]!r})"


def _address(token: str) -> str | None:
    """`token` as a normalised IP address, or None when it is not one ("18:30:00", "1.2.999.4")."""
    try:
        return str(ipaddress.ip_address(token.strip("[]")))
    except ValueError:
        return None


def _addresses(text: str) -> list[tuple[str, str]]:
    """(key, text) of each IP address in `text`: the key is the normalised address."""
    return [(addr, m.group(0)) for pattern in (_IPV4, _IPV6) for m in pattern.finditer(text)
            if (addr := _address(m.group(0))) is not None]


def _url_key(url: str) -> str:
    """A URL as held and compared: trailing sentence punctuation dropped, lower case."""
    return url.rstrip(".,;:!?").lower()


def held_targets(text: str) -> frozenset[str]:
    """The URLs and IP addresses the live skill already holds (as `find_shell` compares them)."""
    shown = visible(text)
    return frozenset({_url_key(m.group(0)) for m in URL.finditer(shown)} | {a for a, _ in _addresses(shown)})


def _host(text: str) -> str | None:
    """The first host a network command is aimed at in `text`: URL, address, user@host, host:path, domain."""
    if m := URL.search(text):
        return m.group(0)
    if found := _addresses(text):
        return found[0][1]
    for pattern in (_USER_HOST, _HOST_PATH):
        if m := pattern.search(text):
            return m.group(0)
    for m in _DOMAIN.finditer(text):
        if m.group(1).lower() not in FILE_SUFFIXES:
            return m.group(0)
    return None


def _script_run(text: str) -> str | None:
    """A `scripts/` file of the skill run with arguments (after it, or an environment setting before it)."""
    for m in SCRIPT.finditer(text):
        if arg := _SCRIPT_ARG.match(text, m.end()):
            return text[m.start():arg.end()] + _ARG_REST.match(text, arg.end()).group(0)
        if env := _ENV_BEFORE.search(text[:m.start()]):
            return text[env.start():m.end()]
    return None


def _find(text: str, held: frozenset[str]) -> ShellFinding | None:
    if m := RECURSIVE_RM.search(text):
        return ShellFinding("deletes recursively", m.group(0))
    if m := PIPE_TO_SHELL.search(text):
        return ShellFinding("pipes into an interpreter", m.group(0))
    for m in NETWORK_COMMAND.finditer(text):
        window = re.split(r"[;|→\n]|&&|->", text[m.end():m.end() + 160], maxsplit=1)[0]
        if host := _host(window):
            return ShellFinding(f"runs {m.group(0)} against a host", f"{m.group(0)} … {host}")
    for m in DESTRUCTIVE.finditer(text):
        word = m.group(0).split()[0]
        if word.upper() in _UPPER_ONLY and not word.isupper():
            continue
        return ShellFinding("runs a destructive or privileged command", m.group(0))
    for what, pattern in INLINE_CODE:
        if m := pattern.search(text):
            return ShellFinding(what, m.group(0))
    if run := _script_run(text):
        return ShellFinding("runs the skill's own script with arguments", run)
    for m in URL.finditer(text):
        if _url_key(m.group(0)) not in held:
            return ShellFinding("names a URL the live skill does not hold", _url_key(m.group(0)))
    for addr, shown in _addresses(text):
        if addr not in held:
            return ShellFinding("names an IP address the live skill does not hold", shown)
    return None


def find_shell(line: str, held: frozenset[str] = frozenset()) -> ShellFinding | None:
    """The first shell command or remote action in `line` (see the module doc), or None. `held`:
    the live skill's URLs and addresses (`held_targets`), which a line may repeat."""
    for text in dict.fromkeys((line, visible(line))):
        if (found := _find(text, held)) is not None:
            return found
    return None
