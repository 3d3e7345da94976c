"""A small world for evolve tests: taxi-hailing with a planted failure, its sets, and scripted
executor / judge / proposer models whose answers depend only on the messages. The Studio test's
graphs (skillforge.testing.studio_graphs) run on it too.

The planted failure: the live skill never tells the user the pickup ETA, and every case expects it.
An instruction containing QUOTE_ETA makes the fake executor quote it; the fake judge prefers the
answer that has it. A proposer scenario decides which patches are proposed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from langchain_core.messages import BaseMessage

from skillforge.config import Workspace
from skillforge.context import eval_context
from skillforge.evolution.analyze import RootCauseAnswer
from skillforge.evolution.propose import OneProposal, PatchProposal, ProposalSet
from skillforge.evolution.validate import Paraphrases
from skillforge.evolution.vet import SYSTEM as VET_SYSTEM, L1Vetting
from skillforge.evaluation.executor import Action
from skillforge.evaluation.judge import Judgement
from skillforge.llm.client import LLM
from skillforge.llm.config import resolve_all
from skillforge.state.evaluate import SkillSide
from skillforge.state.evaluate_graph import EvalState
from skillforge.state.llm import BudgetLedger, Role
from skillforge.testing.fake_chat import ScriptedChatModel

SKILL = "taxi-hailing"
QUOTE_ETA = "QUOTE-ETA"
ENV = {"SKILLFORGE_LLM_MODEL": "fake-exec", "SKILLFORGE_JUDGE_MODEL": "fake-judge",
       "SKILLFORGE_PROPOSER_MODEL": "fake-proposer"}
PLACES = [("公司", "虹桥机场"), ("酒店", "外滩"), ("家", "浦东机场"), ("学校", "人民广场"), ("医院", "静安寺"),
          ("公园", "陆家嘴"), ("商场", "徐家汇"), ("车站", "五角场"), ("码头", "新天地"), ("球馆", "中山公园"),
          ("剧院", "南京东路"), ("图书馆", "世纪公园"), ("宾馆", "七宝老街"), ("体育场", "田子坊"),
          ("展览馆", "豫园"), ("办公楼", "长风公园"), ("大学", "徐汇滨江"), ("小区", "前滩"), ("写字楼", "张江"),
          ("菜场", "古北"), ("银行", "虹口足球场"), ("饭店", "迪士尼")]
INSTRUCTION_ANCHOR = "## Instructions"
OVERFIT = "OVERFIT-MARKER"
HOLDOUT_FROM = 8
"""Case numbers from here on are holdout and final_audit (repair 0-5, p0 6-7 with the defaults)."""


def _text(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else str(m.content)


def _case(cid: str, i: int, *, p0: bool = False, tags: tuple[str, ...] = ()) -> dict[str, object]:
    src, dst = PLACES[i % len(PLACES)]
    fare, eta = 40 + 7 * i, f"{8 + i % 10}分钟"
    return {"id": cid, "skill": SKILL, "query": f"从{src}打车去{dst}要多少钱，车多久能到？（{i}号）",
            "fixtures": {"ride.estimate_fare": {"fare_cny": fare, "pickup_eta": eta}},
            "expect": {"must_include": [str(fare), eta], "must_not_include": []}, "p0": p0, "tags": ["zh", *tags]}


def new_workspace(root: Path) -> Workspace:
    """A workspace with the example skills imported and this world's sets."""
    import shutil

    from skillforge.skill import file as skillfile
    from skillforge.config import init_workspace
    from skillforge.library.releases import ReleaseStateMachine

    ws = init_workspace(root)
    shutil.copytree(Path(__file__).resolve().parents[2] / "skills", ws.skills_dir, dirs_exist_ok=True)
    ReleaseStateMachine.open(ws).import_skills(skillfile.scan(ws.skills_dir, ws.root))
    write_sets(ws)
    return ws


def write_sets(ws: Workspace, *, repair: int = 6, p0: int = 2, holdout: int = 6, final_audit: int = 5) -> None:
    """Sets for taxi-hailing only (the other skills' sets are not needed)."""
    d = ws.evaluation_sets_dir
    d.mkdir(parents=True, exist_ok=True)
    n = 0

    def part(name: str, partition: str, count: int, **kw: object) -> None:
        nonlocal n
        cases = [_case(f"{name}-{SKILL}-{k:02d}", n + k, **kw) for k in range(count)]  # type: ignore[arg-type]
        n += count
        (d / f"{name}.json").write_text(json.dumps({"meta": {"name": name, "partition": partition, "skills": [SKILL],
                                                             "auto_case_ids": []}, "cases": cases},
                                                   ensure_ascii=False, indent=1), encoding="utf-8")
    part("repair", "repair", repair, tags=("planted", "missing-eta"))
    part("p0", "p0", p0, p0=True)
    part("holdout", "holdout", holdout)
    part("final_audit", "final_audit", final_audit)


def executor_reply(messages: list[BaseMessage]) -> object:
    """use_skill (unless the body is already in the prompt), then the fare tool, then an answer that
    quotes the ETA only when the loaded instructions say QUOTE-ETA."""
    history = "\n".join(_text(m) for m in messages)
    if INSTRUCTION_ANCHOR not in history:
        listed = re.findall(r"^- ([a-z0-9-]+): ", _text(messages[0]), re.M)
        asked = [n for n in listed if f"[{n}]" in _text(messages[1])]  # a query may name its skill: "[ride-b] ..."
        return Action(kind="use_skill", name=(asked or [SKILL])[0], text="the user wants a taxi")
    if "tool result ride.estimate_fare: " not in history:
        return Action(kind="call_tool", name="ride.estimate_fare", arguments={})
    data = json.loads(history.rsplit("tool result ride.estimate_fare: ", 1)[1].split("\n", 1)[0])
    instructions = history.split(INSTRUCTION_ANCHOR, 1)[1]
    number = re.search(r"（(\d+)号）", _text(messages[1]))
    if OVERFIT in instructions and number and int(number.group(1)) >= HOLDOUT_FROM:
        return Action(kind="answer", text="抱歉，暂时无法叫车。")  # the overfit rule breaks unseen cases
    answer = f"预估车费 {data['fare_cny']} 元"
    if QUOTE_ETA in instructions:
        answer += f"，司机预计 {data['pickup_eta']} 到达"
    return Action(kind="answer", text=answer)


def judge_reply(messages: list[BaseMessage]) -> object:
    prompt = _text(messages[-1])
    if _text(messages[0]).startswith(VET_SYSTEM[:40]):
        return vet_reply(prompt)
    a = prompt.split("[Answer A]\n", 1)[1].split("\n\n[Answer B]\n", 1)[0]
    b = prompt.split("[Answer B]\n", 1)[1]
    facts_a, facts_b = ("车费" in a) + ("预计" in a), ("车费" in b) + ("预计" in b)
    label = "A" if facts_a > facts_b else "B" if facts_b > facts_a else "tie"
    return Judgement(overall=label, task=label, robustness=label, readability="tie", reason="fake: more facts wins")


def vet_reply(prompt: str) -> L1Vetting:
    """The world's L1 vet: an added line is safe when it carries the planted fix (QUOTE-ETA) or only
    routes (a frontmatter example, description or not_for), unsafe otherwise."""
    block = prompt.split("<changed>\n", 1)[1].split("\n</changed>", 1)[0]
    part, unsafe = "", ""
    for row in block.splitlines():
        if row.startswith("[") and row.endswith("]"):
            part = row
        elif row.startswith("+ added: ") and part.startswith("[body.") and QUOTE_ETA not in row:
            unsafe = row.removeprefix("+ added: ")
    if unsafe:
        return L1Vetting(verdict="unsafe", line=unsafe, reason="fake: an added body line without the planted fix")
    return L1Vetting(verdict="safe", reason="fake: the planted fix or routing text only")


def eta_patch(claimed: int = 1, line: str = f"- {QUOTE_ETA}：报价时同时告诉用户司机预计多久到达。") -> PatchProposal:
    """An instruction edit that fixes the planted failure."""
    return PatchProposal(format="search_replace", claimed_level=claimed, rationale="answers must state the ETA",
                         patch=f"<<<<<<< SEARCH\n{INSTRUCTION_ANCHOR}\n=======\n{INSTRUCTION_ANCHOR}\n{line}\n>>>>>>> REPLACE\n")


def examples_patch() -> PatchProposal:
    """An L1 edit (the body's Examples section) that fixes it too."""
    return PatchProposal(format="search_replace", claimed_level=1, rationale="an example that quotes the ETA",
                         patch="<<<<<<< SEARCH\n## Examples\n=======\n## Examples\n"
                               f"- 输入：\"打车去机场多少钱\" → 报出车费，并按 {QUOTE_ETA} 说明司机多久到。\n>>>>>>> REPLACE\n")


Scenario = Callable[[int], list[PatchProposal]]
"""Round number -> the proposals of that round."""


class World:
    """The scripted models of one test, with a proposer scenario and counters."""

    def __init__(self, scenario: Scenario, *, retry: PatchProposal | None = None, call_log: Path | None = None) -> None:
        self.scenario = scenario
        self.retry = retry
        self.rounds = 0
        self.retries: list[str] = []
        self.call_log = call_log
        self.executor = ScriptedChatModel.responding(self._logged("executor", executor_reply))
        self.judge = ScriptedChatModel.responding(self._logged("judge", judge_reply))
        self.proposer = ScriptedChatModel.responding(self._logged("proposer", self.proposer_reply))

    def _logged(self, role: str, reply: Callable[[list[BaseMessage]], object]) -> Callable[[list[BaseMessage]], object]:
        """With a call log, every request a model receives appends one line (across processes)."""
        def answer(messages: list[BaseMessage]) -> object:
            if self.call_log is not None:
                with self.call_log.open("a", encoding="utf-8") as fh:
                    fh.write(role + "\n")
            return reply(messages)
        return answer

    def proposer_reply(self, messages: list[BaseMessage]) -> object:
        system, prompt = _text(messages[0]), _text(messages[-1])
        if system.startswith("You diagnose"):
            return RootCauseAnswer(category="instruction_behaviour", summary="answers omit the pickup ETA",
                                   evidence=re.findall(r"id=(\S+)", prompt))
        if system.startswith("Rewrite a user request"):
            query = prompt.split("Request: ", 1)[1].split("\n", 1)[0]
            return Paraphrases(queries=["麻烦问一下，" + query])
        if "could not be applied" in prompt:
            self.retries.append(prompt)
            assert self.retry is not None
            return OneProposal(candidate=self.retry)
        self.rounds += 1
        return ProposalSet(candidates=self.scenario(self.rounds))

    def llm(self, ledger: BudgetLedger | None = None, cache: object | None = None) -> LLM:
        return LLM(resolve_all(env=ENV), {Role.EXECUTOR: self.executor, Role.JUDGE: self.judge,
                                         Role.PROPOSER: self.proposer}, cache=cache, ledger=ledger)  # type: ignore[arg-type]


def seed_failures(ws: Workspace, llm: LLM, eval_set: str = "repair", skill: str = SKILL) -> str:
    """Evaluate the live release against itself on a set, as a user would: its traces hold the
    planted failures that collect reads. Returns the run id."""
    from skillforge.graphs.evaluate import build_evaluate_graph
    from skillforge.library.registry import SkillRegistry

    reg = SkillRegistry.load(ws)
    pub = reg.get(skill)
    assert pub.release.commit_hash is not None
    text = reg.repo.read(pub.release.commit_hash, f"{pub.release.skill_path}/SKILL.md").decode("utf-8")
    side = SkillSide(text=text, release_id=pub.release.release_id, label="live")
    base = f"seed-{eval_set}" if skill == SKILL else f"seed-{eval_set}-{skill}"
    run_id, n = base, 1  # each evaluation an id of its own: a used one is RunIdTaken
    while any((ws.traces_dir / f"{run_id}{ext}").exists() for ext in (".claim", ".jsonl")):
        n += 1
        run_id = f"{base}-{n}"
    build_evaluate_graph(checkpointer=False).invoke(
        EvalState(run_id=run_id, skill=skill, eval_set=eval_set, baseline=side, candidate=side),
        {"max_concurrency": 4}, context=eval_context(ws, llm))
    return run_id


def sets_dir_bytes(ws: Workspace) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in Path(ws.evaluation_sets_dir).glob("*.json")}
