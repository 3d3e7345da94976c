#!/usr/bin/env bash
# The SkillForge demo on the embedded defaults: a fresh workspace outside this repository, the
# example skills imported, one small edit published as a new release, reverted, and the index
# and release history printed.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
ws="$(mktemp -d "${TMPDIR:-/tmp}/skillforge-demo.XXXXXX")"
export SKILLFORGE_WORKSPACE="$ws"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "skillforge init $ws"
skillforge init "$ws"

step "import the example skills"
skillforge skills import --from "$repo/skills"
skillforge skills list

step "edit news-digest in the working tree and publish it"
skill=news-digest
printf -- '- Mention at most five stories; say how many more were left out.\n' >> "$ws/skills/$skill/SKILL.md"
skillforge release publish "$skill"
skillforge skills use "$skill" --reason "demo: after the edit" | tail -n 3

step "revert $skill to its imported release"
first=$(skillforge releases list "$skill" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["release_id"])')
skillforge release revert "$skill" "$first"
skillforge skills use "$skill" --reason "demo: after the revert" | tail -n 3

step "the index an agent sees"
skillforge skills index

step "release history of $skill (* = current)"
skillforge releases list "$skill"

step "route queries (rule -> embed; no LLM configured, so uncertain queries answer NONE)"
skillforge route "帮我订明晚七点四个人的火锅"
skillforge route "where is my parcel 1Z999AA10123456784"
skillforge route "给我讲个笑话"
cp -r "$repo/evaluation_sets/router" "$ws/evaluation_sets/"

step "calibrate the router on evaluation_sets/router/dev.jsonl, then evaluate"
skillforge route calibrate --cases "$ws/evaluation_sets/router/dev.jsonl"
skillforge route eval --cases "$ws/evaluation_sets/router/dev.jsonl"

step "LLM roles (no endpoint configured here: set SKILLFORGE_LLM_* or run \`skillforge llm serve\` with the [local] extra)"
skillforge llm status || true

step "router log"
cat "$ws/runs/router.jsonl"
printf '\nworkspace left at %s\n' "$ws"
