"""Secret-scan speed: MB/s of rules/skillfiles.py `scan_secrets` on large generated files.

Inputs (deterministic, generated in memory, no network), each at 1, 5 and 10 MB:
  markdown   prose paragraphs with headings, lists, links and inline code
  code       Python and JavaScript source (string literals, assignments of harmless values)
  csv/log    CSV rows and log lines with hex ids, UUIDs, timestamps and key=value pairs
  base64     a markdown file embedding a base64 image (76-column lines) and one data: URI line
  json       minified JSON with no line break at all
  zip, tgz   the markdown packed as a zip and as a tar.gz (rules/archives.py unpacks them)
One planted secret sits at the end of each input: a run that does not report it is marked MISSED.
Also timed when --cli: `skillforge skills validate <folder>` on a skill holding the 10 MB markdown.

    python benchmarks/secret_scan_speed.py [--sizes 1,5,10] [--kinds markdown,json] [--repeat 1]
    PYTHONPATH=/work/main python benchmarks/secret_scan_speed.py   # another checkout, same inputs
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import random
import tarfile
import time
import uuid
import zipfile

from skillforge.rules.skillfiles import scan_secrets

MB = 1024 * 1024
REGULAR = 0o100644
PLANTED = "ghp_" + "Q7xK2mN9pL4vR8sT1wY6bC3dF5gH0jZ2aE4u"
"""A GitHub-token shape planted at each input's end: the scan must report it."""

WORDS = ("the skill reads a request and answers it with the booking tool when the user gives a date "
         "time party size and name check availability first never invent a confirmation number keep "
         "answers short and ask one question at a time if the restaurant is full offer the nearest slot "
         "references describe the api fields errors retries and rate limits of each endpoint").split()


def _prose(rng: random.Random, size: int) -> str:
    out, n = [], 0
    while n < size:
        kind = rng.random()
        if kind < 0.08:
            line = "#" * rng.randint(1, 3) + " " + " ".join(rng.choices(WORDS, k=rng.randint(2, 6))).title()
        elif kind < 0.25:
            line = "- " + " ".join(rng.choices(WORDS, k=rng.randint(5, 14))) + f" (`step_{rng.randint(1, 99)}`)"
        else:
            words = rng.choices(WORDS, k=rng.randint(40, 120))
            words[rng.randrange(len(words))] = f"[the docs](https://example.com/docs/{rng.randint(1, 999)}.html)"
            line = " ".join(words).capitalize() + "."
        out.append(line + "\n\n")
        n += len(line) + 2
    return "".join(out)


def _code(rng: random.Random, size: int) -> str:
    out, n, i = [], 0, 0
    while n < size:
        i += 1
        if i % 2:
            block = (f"def handler_{i}(request, retries={rng.randint(1, 5)}):\n"
                     f"    \"\"\"{' '.join(rng.choices(WORDS, k=10))}.\"\"\"\n"
                     f"    url = \"https://api.example.com/v{rng.randint(1, 3)}/\" + request.path + \"?page=\" + str(request.page)\n"
                     f"    headers = {{\"Accept\": \"application/json\", \"X-Request-Id\": str(uuid.uuid4())}}\n"
                     f"    token = os.environ[\"API_TOKEN_{i}\"]\n"
                     f"    for attempt in range(retries):\n"
                     f"        resp = session.get(url, headers=headers, timeout={rng.randint(5, 30)})\n"
                     f"        if resp.status_code == 200:\n"
                     f"            return resp.json()[\"items\"]\n"
                     f"    raise RuntimeError(\"gave up after \" + str(retries) + \" tries: \" + url)\n\n\n")
        else:
            block = (f"export function render{i}(props) {{\n"
                     f"  const label = 'Booking for ' + props.name + ' at ' + props.time;\n"
                     f"  const apiKey = process.env.API_KEY_{i};\n"
                     f"  return fetch(`/api/render/${{props.id}}`, {{ method: 'POST', body: JSON.stringify({{ label, n: {rng.randint(1, 9)} }}) }});\n"
                     f"}}\n\n")
        out.append(block)
        n += len(block)
    return "".join(out)


def _log(rng: random.Random, size: int) -> str:
    out, n, i = ["id,request_id,sha,started,user,status,latency_ms\n"], 0, 0
    while n < size:
        i += 1
        u = uuid.UUID(int=rng.getrandbits(128), version=4)
        sha = "%040x" % rng.getrandbits(160)
        if i % 2:
            line = f"{i},{u},{sha},2026-12-0{rng.randint(1, 9)}T12:{rng.randint(10, 59)}:00Z,user{rng.randint(1, 999)},ok,{rng.randint(1, 900)}\n"
        else:
            line = (f"2026-12-07 12:00:{rng.randint(10, 59)} INFO request_id={u} commit={sha} "
                    f"span=0x{rng.getrandbits(64):016x} path=/v1/bookings status=200 took={rng.randint(1, 900)}ms\n")
        out.append(line)
        n += len(line)
    return "".join(out)


def _base64(rng: random.Random, size: int) -> str:
    blob = base64.b64encode(rng.randbytes(size * 3 // 4 // 2)).decode("ascii")
    lines = "\n".join(blob[i:i + 76] for i in range(0, len(blob), 76))
    return ("# Logo\n\n```\n" + lines + "\n```\n\n![inline](data:image/png;base64," + blob + ")\n")


def _json(rng: random.Random, size: int) -> str:
    items, n = [], 0
    while n < size:
        item = {"id": str(uuid.UUID(int=rng.getrandbits(128), version=4)), "sha": "%040x" % rng.getrandbits(160),
                "name": " ".join(rng.choices(WORDS, k=4)), "size": rng.randint(1, 99), "ok": rng.random() < 0.5,
                "tags": rng.choices(WORDS, k=3), "token_count": rng.randint(1, 4000)}
        items.append(item)
        n += len(json.dumps(item, separators=(",", ":"))) + 1
    return json.dumps({"items": items}, separators=(",", ":"))


def _zip(data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("references/guide.md", data)
    return buf.getvalue()


def _tgz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("references/guide.md")
        info.size, info.mtime = len(data), 0
        tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


TEXT_KINDS = {"markdown": ("references/guide.md", _prose), "code": ("scripts/client.py", _code),
              "csv/log": ("references/requests.log", _log), "base64": ("references/logo.md", _base64),
              "json": ("references/data.json", _json)}
KINDS = (*TEXT_KINDS, "zip", "tgz")


def make_input(kind: str, mb: int) -> tuple[str, bytes, int]:
    """(path, bytes, unpacked size) of one generated input of about `mb` MB, a secret at its end."""
    rng = random.Random(f"{kind}-{mb}")
    base = "markdown" if kind in ("zip", "tgz") else kind
    path, make = TEXT_KINDS[base]
    text = make(rng, mb * MB)
    if base == "json":  # still one line: the secret is the last value
        text = text[:-2] + f'],"note":"{PLANTED}"}}'
    else:
        text += f'\nclient = Client(token="{PLANTED}")\n'
    data = text.encode("utf-8")
    if kind == "zip":
        return "references/guide.zip", _zip(data), len(data)
    if kind == "tgz":
        return "references/guide.tar.gz", _tgz(data), len(data)
    return path, data, len(data)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,5,10")
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--repeat", type=int, default=1, help="runs per input; the best is reported")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    print(f"{'input':<10} {'MB':>4} {'seconds':>8} {'MB/s':>7} found")
    for kind in args.kinds.split(","):
        for mb in (int(s) for s in args.sizes.split(",")):
            path, data, size = make_input(kind, mb)
            best, findings = float("inf"), []
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                findings = scan_secrets({path: (REGULAR, data)})
                best = min(best, time.perf_counter() - t0)
            found = "yes" if any("GitHub token" in f.kind for f in findings) else "MISSED"
            rows.append({"kind": kind, "mb": size / MB, "seconds": best, "mb_s": size / MB / best,
                         "findings": len(findings), "planted_found": found == "yes"})
            print(f"{kind:<10} {size / MB:>4.1f} {best:>8.2f} {size / MB / best:>7.2f} {found} ({len(findings)} findings)",
                  flush=True)
    if args.json:
        print(json.dumps(rows))


if __name__ == "__main__":
    main()
