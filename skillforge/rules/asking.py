"""Asking the user first, in the languages the English-centred word lists of `rules/directives.py` miss (pure).

A not_for item takes the skill out of what it names, so one naming the confirmation step ("asking
before a dump is removed") removes the step a Constraint requires: `directives.find_topic` makes it
L3. Its own lists hold English, 确认/確認/同意 and 先问; `ASK_FIRST` adds how the same step is said in
simplified and traditional Chinese (询问/詢問, 征求/徵求, 问用户, 使用者同意), French (demander
avant, accord, autorisation, approbation), German (nachfragen, Rückfrage, Zustimmung, Erlaubnis,
Bestätigung, Freigabe), Spanish (preguntar, permiso, autorización) and Japanese (許可, 承認, 聞く).
Accents are optional (`visible` drops them: Ruckfrage). It is read in not_for items only: there a false alarm costs a review, a miss publishes the skill's
exit from its own safety step.
"""

from __future__ import annotations

import re

ASK_FIRST = re.compile(
    r"询问|詢問|征求|徵求|征得|徵得|[问問](?:过|過)?(?:一下)?(?:用户|用戶|使用者|客户|客戶)|[请請]示|许可|許可|批准|核准|"
    r"\bdemand\w*\s+(?:\S+\s+){0,6}?(?:avant|accord|autorisation|permission|confirmation)|"
    r"\b(?:accord|autorisation|approbation|consentement)\b|"
    r"\b(?:nachfrag\w*|r[uü]ckfrag\w*|zustimm\w*|erlaubnis|best[aä]tig\w*|freigabe|einverst[aä]ndnis|einwilligung)\b|"
    r"\b(?:vorher|zuvor)\s+(?:\S+\s+){0,3}?fragen\b|\bfragen\s+(?:\S+\s+){0,3}?vor\b|"
    r"\b(?:pregunt\w*|permiso|autorizaci\w*)\b|承認|聞[いく]|尋ね",
    re.IGNORECASE)
"""The user asked first, or their consent, outside English (a not_for item holding it drops that step)."""
