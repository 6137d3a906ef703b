"""The pattern tables of the shell tool: the union of GoClaw's deny patterns (seed 001 §4)
and IronClaw's blocked commands, dangerous patterns, injection checks and
never-auto-approve patterns (seed 004 §4.6).

Every pattern is a regex matched against several views of a command (see
:mod:`tools.exec.analysis`): the raw text, and each command and pipeline after quotes,
escapes and wrappers are removed. ``anchored`` patterns only match at the start of a
single command's view (``eval …``, not ``echo eval``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = [
    "DANGEROUS",
    "DENY",
    "INJECTION",
    "NEVER_AUTO_APPROVE",
    "CommandPattern",
]

_SEG = r"[^;&|\n]*"  # within one simple command
_SH = r"(?:sudo\s+)?(?:/\S*/)?(?:ba|z|da|k|a|mk)?sh\b"


class CommandPattern(NamedTuple):
    #: deny | dangerous | injection | never-auto-approve
    category: str
    #: The seed's spelling, for messages and audits.
    label: str
    regex: re.Pattern[str]
    anchored: bool = False


def _p(
    category: str, label: str, pattern: str, flags: int = 0, anchored: bool = False
) -> CommandPattern:
    return CommandPattern(category, label, re.compile(pattern, flags), anchored)


def _deny(label: str, pattern: str, flags: int = 0) -> CommandPattern:
    return _p("deny", label, pattern, flags)


#: GoClaw's table (seed 001 §4) and IronClaw's BLOCKED_COMMANDS: never run.
DENY: tuple[CommandPattern, ...] = (
    _deny(
        "rm -rf",
        rf"\brm\b(?={_SEG}\s(?:-[a-zA-Z]*[rR]|--recursive\b))(?={_SEG}\s(?:-[a-zA-Z]*f|--force\b))",
    ),
    _deny("rm -rf /", rf"\brm\s{_SEG}--no-preserve-root"),
    _deny("del /f", r"\bdel\s+(?:/\w+\s+)*/f\b", re.IGNORECASE),
    _deny("rmdir /s", r"\brmdir\s+(?:/\w+\s+)*/s\b", re.IGNORECASE),
    _deny("mkfs", r"\bmkfs(?:\.\w+)?\b"),
    _deny("dd if=", rf"\bdd\s+(?:{_SEG}\s)?if="),
    _deny("dd if=/dev/zero", r"\bif=/dev/(?:zero|random|urandom)\b.*\bof=/dev/"),
    _deny("> /dev/sd*", r">\s*/dev/(?:sd[a-z]|hd[a-z]|vd[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d)"),
    _deny("shutdown", r"\bshutdown\b"),
    _deny("reboot", r"\breboot\b"),
    _deny("poweroff", r"\bpoweroff\b"),
    _deny("halt", r"(?:^|[;&|]\s*|\bsudo\s+)halt\b"),
    _deny("init 0", r"\b(?:init|telinit)\s+[06]\b"),
    _deny("systemctl poweroff", r"\bsystemctl\s+(?:poweroff|reboot|halt|kexec)\b"),
    _deny(":(){ ... };:", r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:[^}]*\}\s*;\s*:"),
    _deny(":(){ ... };:", r"\b(\w+)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;\s*\1\b"),
    _deny("curl | sh", rf"\bcurl\b[^|]*\|\s*{_SH}"),
    _deny("wget -O - | sh", rf"\bwget\b[^|]*\|\s*{_SH}"),
    _deny("/dev/tcp/", r"/dev/(?:tcp|udp)/"),
    _deny("nc -e", rf"\b(?:nc|ncat|netcat)\b{_SEG}\s-[a-zA-Z]*[ec]\b"),
    _deny("socat exec", r"\bsocat\b.*\b(?:exec|system):", re.IGNORECASE),
    _deny("eval $()", r"\beval\s+[\"']?(?:\$\(|`)"),
    _deny("base64 -d | sh", rf"\bbase64\b{_SEG}(?:-d\b|--decode\b|-D\b){_SEG}\|\s*{_SH}"),
    _deny("chmod -R 777 /", r"\bchmod\s+(?:-\w+\s+)*(?:-R|--recursive)\s+\S*\s+/(?:\s|$)"),
    _deny("> /dev/mem", r">\s*/dev/(?:mem|kmem|port)\b"),
)


def _danger(label: str, pattern: str, flags: int = 0, anchored: bool = False) -> CommandPattern:
    return _p("dangerous", label, pattern, flags, anchored)


#: IronClaw DANGEROUS_PATTERNS: privilege escalation and exfiltration; refused.
DANGEROUS: tuple[CommandPattern, ...] = (
    _danger("sudo", r"(?:^|[\s;&|(`])sudo\b"),
    _danger("doas", r"(?:^|[\s;&|(`])doas\b"),
    _danger("pkexec", r"\bpkexec\b"),
    _danger("su", r"^su(?:\s|$)", anchored=True),
    _danger("eval", r"^eval(?:\s|$)", anchored=True),
    _danger("$(curl", r"(?:\$\(|`)\s*(?:curl|wget)\b"),
    _danger("/etc/passwd", r"/etc/(?:passwd|shadow|gshadow|sudoers|master\.passwd)\b"),
    _danger("~/.ssh", r"(?:^|[\s/=:'\"])\.ssh\b|\bid_(?:rsa|dsa|ecdsa|ed25519)\b"),
    _danger("authorized_keys", r"\bauthorized_keys\b"),
    _danger(
        "shell history",
        r"\.(?:bash|zsh|sh|python|psql|mysql|node_repl|sqlite|lesshst)_?history\b|\.histfile\b",
    ),
    _danger("history", r"^history(?:\s|$)", anchored=True),
    _danger("setuid bit", r"\bchmod\s+(?:-\w+\s+)*(?:[ugoa]*\+[rwx]*s|[2467][0-7]{3})\b"),
    _danger("chown root", r"\bchown\s+(?:-\w+\s+)*root\b"),
    _danger("setcap", r"\bsetcap\b"),
    _danger("visudo", r"\bvisudo\b"),
    _danger("kernel modules", r"\b(?:insmod|rmmod|modprobe)\b"),
    _danger("/proc/*/environ", r"/proc/(?:self|\d+|\*)/(?:environ|mem|maps)\b"),
    _danger(
        "credential files",
        r"\.aws/credentials|\.netrc\b|\.docker/config\.json|\.kube/config|\.gnupg\b|"
        r"\.git-credentials|\.pgpass\b|\.npmrc\b|\.pypirc\b",
    ),
    _danger("docker socket", r"/var/run/docker\.sock|/run/docker\.sock"),
    _danger("nsenter", r"\bnsenter\b"),
    _danger("LD_PRELOAD", r"\bLD_(?:PRELOAD|LIBRARY_PATH|AUDIT)="),
    _danger("mount", r"^(?:u?mount)(?:\s|$)", anchored=True),
    _danger("passwd", r"^(?:passwd|chpasswd|usermod|useradd|adduser)(?:\s|$)", anchored=True),
)


def _inject(label: str, pattern: str, flags: int = 0) -> CommandPattern:
    return _p("injection", label, pattern, flags)


#: IronClaw detect_command_injection: refused.
INJECTION: tuple[CommandPattern, ...] = (
    _inject("null byte", r"\x00"),
    _inject("base64 | sh", rf"\bbase64\b[^|]*\|\s*{_SH}"),
    _inject("printf | sh", rf"\bprintf\b[^|]*\|\s*{_SH}"),
    _inject("xxd | sh", rf"\bxxd\b[^|]*\|\s*{_SH}"),
    _inject("rev | sh", rf"\brev\b[^|]*\|\s*{_SH}"),
    _inject(
        "DNS exfiltration",
        r"\b(?:dig|nslookup|host|drill|resolvectl\s+query)\b[^;&|\n]*(?:\$\(|`|\$\{?[A-Za-z_])",
    ),
    _inject("| nc", r"\|\s*(?:nc|ncat|netcat|telnet)\b"),
    _inject("nc < file", rf"\b(?:nc|ncat|netcat)\b{_SEG}<\s*\S"),
    _inject(
        "curl -d @file",
        rf"\bcurl\b{_SEG}(?:\s(?:-d|--data(?:-binary|-raw|-urlencode)?|-F|--form)\s*\S*@"
        rf"|\s(?:-T|--upload-file)\s)",
    ),
    _inject("wget --post-file", r"\bwget\b[^;&|\n]*--post-(?:file|data)"),
    _inject("/dev/tcp exfiltration", r"\bexec\s+\d*[<>]+\s*/dev/(?:tcp|udp)/"),
)


def _ask(label: str, pattern: str, flags: int = 0, anchored: bool = False) -> CommandPattern:
    return _p("never-auto-approve", label, pattern, flags, anchored)


_I = re.IGNORECASE
#: IronClaw NEVER_AUTO_APPROVE_PATTERNS (35+): run only after a person approves, every time.
NEVER_AUTO_APPROVE: tuple[CommandPattern, ...] = (
    _ask("rm -rf", rf"\brm\b(?={_SEG}\s-[a-zA-Z]*[rR])(?={_SEG}\s-[a-zA-Z]*f)"),
    _ask("rm -r", rf"\brm\b{_SEG}(?:\s-[a-zA-Z]*[rR]\b|--recursive\b)"),
    _ask("rm *", rf"\brm\s{_SEG}\*"),
    _ask(
        "git push --force",
        rf"\bgit\s{_SEG}\bpush\b{_SEG}(?:\s--force\b|\s-f\b|--force-with-lease|\s\+\S)",
    ),
    _ask("git push --delete", rf"\bgit\s{_SEG}\bpush\b{_SEG}(?:--delete\b|\s-d\b|\s:\S)"),
    _ask("git reset --hard", rf"\bgit\s{_SEG}\breset\b{_SEG}--hard\b"),
    _ask("git clean -f", rf"\bgit\s{_SEG}\bclean\b{_SEG}\s-[a-zA-Z]*f"),
    _ask("git checkout -- .", rf"\bgit\s{_SEG}\b(?:checkout|restore)\b{_SEG}\s\.(?:\s|$)"),
    _ask("git branch -D", rf"\bgit\s{_SEG}\bbranch\b{_SEG}\s-D\b"),
    _ask("git rebase", rf"\bgit\s{_SEG}\brebase\b"),
    _ask("git filter-branch", r"\bgit\s+filter-(?:branch|repo)\b"),
    _ask("git stash drop", rf"\bgit\s{_SEG}\bstash\s+(?:drop|clear)\b"),
    _ask("DROP TABLE", r"\bDROP\s+TABLE\b", _I),
    _ask("DROP DATABASE", r"\bDROP\s+(?:DATABASE|SCHEMA)\b", _I),
    _ask("TRUNCATE TABLE", r"\bTRUNCATE\s+(?:TABLE\s+)?[A-Za-z_\"`]", _I),
    _ask("DELETE FROM", r"\bDELETE\s+FROM\b", _I),
    _ask("ALTER TABLE DROP", r"\bALTER\s+TABLE\b.*\bDROP\b", _I),
    _ask("truncate /", rf"\btruncate\b{_SEG}\s/"),
    _ask("truncate -s 0", rf"\btruncate\b{_SEG}-s\s*0\b"),
    _ask("chmod -R", rf"\bchmod\b{_SEG}(?:\s-R\b|--recursive\b)"),
    _ask("chown -R", rf"\bchown\b{_SEG}(?:\s-R\b|--recursive\b)"),
    _ask("chmod 777", r"\bchmod\s+(?:-\w+\s+)*0?777\b"),
    _ask("kill -9", r"\bkill\s+(?:-9|-KILL|-SIGKILL|-s\s+(?:9|KILL|SIGKILL))\b"),
    _ask("kill -1", r"\bkill\s+(?:-\S+\s+)*-1(?:\s|$)"),
    _ask("killall", r"\b(?:killall|pkill)\b"),
    _ask("shred", r"\bshred\b"),
    _ask("find -delete", rf"\bfind\b{_SEG}\s-delete\b"),
    _ask("find -exec rm", r"\bfind\b.*-exec(?:dir)?\s+rm\b"),
    _ask(
        "docker rm",
        r"\bdocker\s+(?:rm|rmi|system\s+prune|volume\s+(?:rm|prune)|container\s+prune|image\s+prune)\b",
    ),
    _ask("kubectl delete", r"\bkubectl\s+(?:\S+\s+)*delete\b"),
    _ask("terraform destroy", r"\bterraform\s+(?:destroy|apply\s+.*-auto-approve)\b"),
    _ask("npm publish", r"\b(?:npm|yarn|pnpm)\s+(?:publish|unpublish)\b"),
    _ask("cargo publish", r"\bcargo\s+(?:publish|yank)\b"),
    _ask("twine upload", r"\btwine\s+upload\b"),
    _ask("pip uninstall", r"\bpip3?\s+uninstall\b"),
    _ask(
        "apt remove",
        r"\b(?:apt|apt-get|yum|dnf|zypper|apk|pacman)\s+(?:remove|purge|autoremove|erase|del|-R)\b",
    ),
    _ask("crontab -r", r"\bcrontab\s+(?:-\w+\s+)*-r\b"),
    _ask("systemctl stop", r"\bsystemctl\s+(?:stop|disable|mask|kill)\b"),
    _ask("iptables -F", r"\b(?:iptables|ip6tables|nft)\s+(?:-F|--flush|flush)\b|\bufw\s+disable\b"),
    _ask("userdel", r"\b(?:userdel|deluser|groupdel)\b"),
    _ask("mv to /dev/null", rf"\bmv\s{_SEG}\s/dev/null\b"),
    _ask("> /etc/", r"(?:>|\btee\s+(?:-a\s+)?)\s*/etc/"),
)
