"""rules/skillfiles.py at its edges: which files differ, the verdict cap for what an evaluation did
not run, and the secret scan of a skill's text files (pure: data in, answer out)."""

from __future__ import annotations

import pytest

from skillforge.rules.skillfiles import ChangeKind, cap_verdict, file_changes, scan_secrets, scan_text
from skillforge.state.cliopts import EvalVerdict

REG, EXE, LINK = 0o100644, 0o100755, 0o120000
BASE = {"SKILL.md": (REG, "s1"), "scripts/backup.sh": (EXE, "b1"), "scripts/rotate.py": (EXE, "r1"),
        "references/retention.md": (REG, "t1")}


def test_no_other_files_differ_when_only_skill_md_changed():
    assert file_changes(BASE, BASE | {"SKILL.md": (REG, "s2")}) == []
    assert file_changes(BASE, BASE) == []
    assert [c.describe() for c in file_changes(BASE, BASE | {"SKILL.md": (REG, "s2")}, skip=())] == ["SKILL.md changed"]


def test_added_deleted_changed_and_mode_each_named():
    new = {"SKILL.md": (REG, "s1"), "scripts/backup.sh": (REG, "b1"), "scripts/rotate.py": (EXE, "r2"),
           "scripts/new.sh": (EXE, "n1")}
    got = file_changes(BASE, new)
    assert [(c.path, c.kind) for c in got] == [
        ("references/retention.md", ChangeKind.DELETED), ("scripts/backup.sh", ChangeKind.MODE),
        ("scripts/new.sh", ChangeKind.ADDED), ("scripts/rotate.py", ChangeKind.CHANGED)]
    assert [c.describe() for c in got] == ["references/retention.md deleted", "scripts/backup.sh mode 100755 -> 100644",
                                           "scripts/new.sh added", "scripts/rotate.py changed"]
    both = file_changes({"a": (EXE, "x")}, {"a": (REG, "y")})
    assert [c.describe() for c in both] == ["a changed (mode 100755 -> 100644)"]
    assert [c.describe() for c in file_changes({"a": (REG, "x")}, {"a": (LINK, "x")})] == ["a mode 100644 -> 120000"]


def test_pass_with_unevaluated_files_becomes_review_naming_them():
    verdict, why = cap_verdict(EvalVerdict.PASS, ["scripts/rotate.py changed", "references/retention.md deleted"])
    assert verdict is EvalVerdict.REVIEW
    assert why == ("scripts/rotate.py changed, references/retention.md deleted: not evaluated (only SKILL.md is run): "
                   "a person must look")
    many = [f"f{i} added" for i in range(12)]
    assert cap_verdict(EvalVerdict.PASS, many)[1].startswith("f0 added, f1 added") and "and 2 more" in cap_verdict(
        EvalVerdict.PASS, many)[1]


@pytest.mark.parametrize("verdict", [EvalVerdict.REVIEW, EvalVerdict.DECLINED, EvalVerdict.INVALID])
def test_other_verdicts_stand(verdict):
    assert cap_verdict(verdict, ["scripts/rotate.py changed"]) == (verdict, None)


def test_pass_without_other_files_stands():
    assert cap_verdict(EvalVerdict.PASS, []) == (EvalVerdict.PASS, None)


def test_secret_scan_names_file_line_kind_and_only_a_prefix():
    text = ("# notes\n"
            'AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"\n'
            "- Connect with PGPASSWORD=hunter2Xk9pq2Lw7RtZ4m and AWS key AKIAIOSFODNN7EXAMPLE.\n"
            "token ghp_4Xk9LmQ2 wR8sT1vY6bN3 cD5eF7gH0jK2lM4n\n"
            "password: ask the user for it\n"
            'KEY = os.environ["AWS_SECRET_ACCESS_KEY"]\n')
    got = [f.describe() for f in scan_text("scripts/rotate.py", text)]
    assert got == ["scripts/rotate.py:2: AWS secret key (AWS_SECRET_ACCESS_KEY=…)",   # one finding, not two
                   "scripts/rotate.py:3: credential assignment (PGPASSWORD=…)",
                   "scripts/rotate.py:3: AWS access key (AKIAIO…)",
                   "scripts/rotate.py:4: GitHub token (split) (ghp_4X…)"]
    assert not any(s in "".join(got) for s in ("wJalrX", "hunter2", "ODNN7EX"))


def test_secret_scan_reads_binary_files_strings_and_symlink_targets_and_bad_utf8():
    files = {"sample.bin": (REG, b"\x00\x01AKIAIOSFODNN7EXAMPLE"), "link": (LINK, b"AKIAIOSFODNN7EXAMPLE"),
             "notes-latin1.txt": (REG, "café\nAKIAIOSFODNN7EXAMPLE\n".encode("latin-1"))}
    assert [f.describe() for f in scan_secrets(files)] == ["link:1: AWS access key in the link target (AKIAIO…)",
                                                           "notes-latin1.txt:2: AWS access key (AKIAIO…)",
                                                           "sample.bin:1: AWS access key in binary data (AKIAIO…)"]
    assert scan_secrets({"SKILL.md": (REG, b"Never paste a password: ask the user for it.\n")}) == []
