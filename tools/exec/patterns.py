"""The pattern tables of the shell tool: the union of GoClaw's deny patterns (seed 001 §4)
and IronClaw's blocked commands, dangerous patterns, injection checks and
never-auto-approve patterns (seed 004 §4.6). :data:`DENY` is the one deny table:
``tools.deny`` (approvals, quality gates) reads it too, by its seed ``group``.

Every pattern is a regex matched against several forms of a command (see
:mod:`tools.exec.analysis`): the raw text, and each command and pipeline after quotes,
escapes and wrappers are removed. ``anchored`` patterns only match at the start of a
single command's form (``eval …``, not ``echo eval``). A pattern with ``also`` spans the
command line: its two regexes may match different forms (``cd /proc/$PPID && cat
environ``).

Reverse shells are refused as a class, not as the seed's two spellings: netcat (as the
command word, not ``grep -r nc``) running a program in any spelling of its option
(``-e``, ``-c``, ``-lve``, ``-e/bin/sh``, ``--exec=…``, ``--sh-exec``, ``--lua-exec`` and
their getopt_long prefixes) or given an argument the shell fills in (``nc $o sh h p``),
socat's ``EXEC:``/``SYSTEM:``/``SHELL:`` addresses in the socat command, any mention of
``/dev/tcp`` or ``/dev/udp`` (``echo /dev/tcp`` too: ``D=/dev/tcp; … >& $D/host/port``
builds the path at run time), a redirection to a ``/dev/…`` or ``host/port`` name built
at run time, a redirection to a parameter (``>& $D``, ``3<>$E``) in a command line with
an interactive shell, a shell reading a moved descriptor (``bash <&3``) or a read-write
open (``exec 3<>``), gawk's ``/inet/tcp/`` and zsh's ``ztcp``, an interactive shell in a
command line that also talks to the network or to a numbered descriptor, a fifo next to
a network client, a network client piped into a shell, ``script`` or awk calling
``system`` (or fed to a shell by ``< <(nc …)``), ``telnetd -l <shell>``, and an
interpreter's inline code that opens a socket and starts a process (after options, with
their separate values: ``python3 -X utf8 -c``, ``perl -I /tmp -e``). A port check (``nc
-z host 80``), ``socat -V`` or a plain socat relay still run. A network client writing
to a file that a later shell runs (``nc h p > /tmp/c; sh /tmp/c``) is not caught.

These tables are a speed bump, not a boundary. A command can always name a file in a way
no table foresees (a relative path after ``cd /etc && head shadow``, a name an
interpreter assembles at run time), and exec on the host runs with the rights of the
process, as root where clawlog runs as root. The isolation layer is the Docker sandbox
(:mod:`tools.sandbox`): run untrusted agents there.
"""

from __future__ import annotations

import re
import string
from typing import Literal, NamedTuple

__all__ = [
    "DANGEROUS",
    "DENY",
    "INJECTION",
    "NEVER_AUTO_APPROVE",
    "CommandPattern",
    "PatternCategory",
]

#: The table a pattern belongs to.
PatternCategory = Literal["deny", "dangerous", "injection", "never-auto-approve"]

_SEG = r"[^;&|\n]*"  # within one simple command
_SH = r"(?:sudo\s+)?(?:/\S*/)?(?:ba|z|da|k|a|mk)?sh\b"

# -- the reverse-shell class -------------------------------------------------------------
_NETCAT = r"\b(?:nc|ncat|netcat|pwncat|cryptcat|sbd)\b"
#: A netcat as the command word: at the start of a command (after a separator, a quote
#: or ``$(``, and after wrappers that are not unwrapped), not a word such as ``grep -r nc``
#: or a file ``in.nc``.
_NETCAT_COMMAND = (
    r"(?:^|[;&|(`'\"\n])\s*(?:(?:[\w.-]*/)*(?:busybox|rlwrap|nohup|exec|command|setsid|time)\s+)*"
    r"(?:[\w.-]*/)*(?:nc|ncat|netcat|pwncat|cryptcat|sbd)(?:\.\w+)?(?![\w-])"
)
#: Short options of the netcats that take a value (ncat, OpenBSD and traditional nc): in
#: a cluster such as ``-lvp4444`` the rest after one of them is that value, not options.
_NETCAT_VALUE_OPTIONS = "dgGHiIKmMoOpPqRsTVwWxXZ"
_NETCAT_FLAGS = "".join(
    sorted(set(string.ascii_letters + string.digits) - set(_NETCAT_VALUE_OPTIONS) - set("ec"))
)
#: ``-e``/``-c`` anywhere getopt reads them as options (``-lve``, ``-e/bin/sh``,
#: ``-cbash``); ``--exec``, ``--sh-exec``, ``--lua-exec`` and every prefix getopt_long
#: accepts for them (``--ex``, ``--sh``, ``--lu``), with a blank or ``=``.
_NETCAT_EXEC = (
    rf"\s(?:-[{_NETCAT_FLAGS}]*[ec]|--(?:e(?:x(?:ec?)?)?|sh(?:-(?:e(?:x(?:ec?)?)?)?)?"
    r"|lu(?:a(?:-(?:e(?:x(?:ec?)?)?)?)?)?)(?=[=\s]|$))"
)
#: A netcat argument the shell fills in (``nc $o /bin/sh h p`` with ``o=-e``): any option.
_NETCAT_EXPANSION = r"\s[\"']?\$(?:\{|\(|[\w@*#?!-])|\s[\"']?`"
#: What talks to the network in a command line: a netcat, socat, telnet, openssl's TLS
#: client, or bash's socket paths.
_NETWORK = _NETCAT + r"|\b(?:socat|telnet|s_client)\b|/dev/(?:tcp|udp)\b|/inet[46]?/(?:tcp|udp)/"
#: An interactive shell: ``sh -i``, ``bash -li``, ``/bin/zsh --norc -i``.
_INTERACTIVE_SHELL = r"(?<![\w-])(?:ba|z|da|k|a|mk|c|tc|fi)?sh\s+(?:-\S+\s+)*-[a-zA-Z]*i\b"
#: Its descriptors moved to a socket: ``<&3``, ``>&196`` (0, 1 and 2 are the usual ones).
_SOCKET_DESCRIPTOR = r"[<>]&\s*(?:[3-9]|\d{2,})\b"
#: Inline code of an interpreter (``-c``, ``-e``, ``-r``, ``--eval``, ``-`` or a heredoc,
#: among the options right after its name: not ``python3 -m pytest -p …``) in a command
#: line that opens a socket and starts a process or moves descriptors.
_INTERPRETER = (
    r"\b(?:python[0-9.]*|pypy[0-9.]*|perl|ruby|php[0-9.]*|node(?:js)?|deno|bun"
    r"|lua(?:jit|[0-9.]*)|tclsh|Rscript|pwsh|powershell|jrunscript)\b"
)
_INLINE_CODE = (
    r"(?:[ \t]+-[^\s-]\S*|[ \t]+--[\w-]+|[ \t]+-[XWICEMrd][ \t]+[^\s-]\S*"
    r"|[ \t]+--(?:require|import|loader|conditions)[ \t]+[^\s-]\S*){0,16}?[ \t]*"
    r"(?:[ \t]-[a-zA-Z]*[cerEp]\b|[ \t]--(?:eval|print)\b|[ \t]-Command\b|[ \t]-(?=\s)|<<)"
)
_SOCKET = (
    r"(?i:socket)|fsockopen|TCPClient|\bnet\.(?:connect|createConnection)\b"
    r"|require\(\s*[\"'](?:node:)?net[\"']"
)
_PROCESS = (
    r"/bin/\w*sh\b|\b(?:ba|z|da|k)?sh\s+-i\b|subprocess|\bpty\b|dup2?\b|\bexec|\bsystem\b"
    r"|popen|proc_open|shell_exec|passthru|child_process|\bspawn|fdopen|cmd\.exe"
)
#: A redirection whose target is built at run time (``${…}``, ``$(…)``, backquotes in the
#: normalized form) under /dev/, or ending in ``/host/port`` (``>& $D/10.0.0.1/4444`` with
#: ``D=/dev/tcp`` or ``D=/dev/tc`` … ``${D}p`` set elsewhere).
_RUN_TIME = r"(?:\$[{(0-9@*#?!$-]|`)"
_RUN_TIME_SOCKET_PATH = (
    r"(?:^|\s)(?:<>|[<>]&|&>>?|>>?|>\||<)\s+"
    rf"(?:/dev/\S*{_RUN_TIME}|(?=\S*{_RUN_TIME})\S*/"
    r"(?:[\w-]+(?:\.[\w-]+)+|localhost|\[?[0-9a-fA-F:]+\]?)/\d{1,5}(?![\w/.]))"
)
#: A shell reading or writing a descriptor the command line opened, or a read-write open
#: (``bash <&3``, ``exec 3<>…``), next to a redirection whose target is a parameter or a
#: substitution (``>& $D``, ``3<>$E``, ``/dev/$1/…``): the socket path built at run time.
_SHELL_WORD = r"(?<![\w./-])(?:[\w.-]*/)*(?:ba|z|da|k|a|mk|c|tc|fi)?sh\b"
_DESCRIPTOR_SHELL = (
    rf"{_INTERACTIVE_SHELL}|{_SHELL_WORD}(?:\s+\d*[<>]&\s*\d+)*\s+\d*<&\s*(?:[3-9]|\d{{2,}})\b"
    r"|\bexec\s+\d*<>|(?:^|\s)<>\s"
)
_EXPANDED_TARGET = (
    r"(?:^|[\s;&|(])\d*(?:<>|[<>]&|&>>?|>>?|>\||<)\s*[\"']?[^\s$`;&|]*(?:\$[{(\w@*#?!-]|`)"
)
#: What reads its input as commands after a network client's pipe: a shell, ``script``
#: (it runs a shell on its input), awk calling ``system`` or piping to a shell.
_SHELL_SINK = (
    rf"{_SH}|(?:[\w.-]*/)*script\b|(?:[\w.-]*/)*[gmn]?awk\b[^|;&\n]*?(?:\bsystem\b|\|\s*\\?[\"'])"
)
#: A network client's output fed to a shell's input by process substitution: ``bash <
#: <(nc h p)`` is ``nc h p | bash``.
_NETWORK_CLIENT = (
    r"(?:[\w.-]*/)*(?:nc|ncat|netcat|pwncat|cryptcat|socat|telnet|openssl|curl|wget)\b"
)
_SUBSTITUTED_INTO_SHELL = rf"{_SHELL_WORD}(?:\s+-\S+)*\s*\d*<\s*<\(\s*{_NETWORK_CLIENT}"


class CommandPattern(NamedTuple):
    category: PatternCategory
    #: The seed's spelling, for messages and audits.
    label: str
    regex: re.Pattern[str]
    anchored: bool = False
    #: A second regex some form of the same command line must match too (any form, not
    #: necessarily the one ``regex`` matched).
    also: re.Pattern[str] | None = None
    #: The seed 001 §4 group of a deny pattern (``destructive file ops``…), for messages.
    group: str = ""


def _p(
    category: PatternCategory,
    label: str,
    pattern: str,
    flags: int = 0,
    anchored: bool = False,
    also: str | None = None,
    group: str = "",
) -> CommandPattern:
    second = re.compile(also, flags) if also is not None else None
    return CommandPattern(category, label, re.compile(pattern, flags), anchored, second, group)


# The seed 001 §4 groups of the deny table.
_FILES, _DISK, _SYSTEM = "destructive file ops", "disk destruction", "system control"
_FORK, _REMOTE, _REVERSE, _EVAL = "fork bomb", "remote code exec", "reverse shell", "eval injection"


def _deny(group: str, label: str, pattern: str, flags: int = 0) -> CommandPattern:
    return _p("deny", label, pattern, flags, group=group)


def _both(first: str, second: str) -> str:
    """A form holding both, in any order: the raw command line, or all of it normalized
    (one regex, so ``tools.deny.match_deny_pattern`` can name it on its own)."""
    return rf"\A(?=[\s\S]*?(?:{first}))(?=[\s\S]*?(?:{second}))"


#: GoClaw's table (seed 001 §4) and IronClaw's BLOCKED_COMMANDS: never run.
DENY: tuple[CommandPattern, ...] = (
    _deny(
        _FILES,
        "rm -rf",
        rf"\brm\b(?={_SEG}\s(?:-[a-zA-Z]*[rR]|--recursive\b))(?={_SEG}\s(?:-[a-zA-Z]*f|--force\b))",
    ),
    _deny(_FILES, "rm -rf /", rf"\brm\s{_SEG}--no-preserve-root"),
    _deny(_FILES, "del /f", r"\bdel\s+(?:/\w+\s+)*/f\b", re.IGNORECASE),
    _deny(_FILES, "rmdir /s", r"\brmdir\s+(?:/\w+\s+)*/s\b", re.IGNORECASE),
    _deny(_DISK, "mkfs", r"\bmkfs(?:\.\w+)?\b"),
    _deny(_DISK, "dd if=", rf"\bdd\s+(?:{_SEG}\s)?if="),
    _deny(_DISK, "dd if=/dev/zero", r"\bif=/dev/(?:zero|random|urandom)\b.*\bof=/dev/"),
    _deny(_DISK, "> /dev/sd*", r">\s*/dev/(?:sd[a-z]|[hv]d[a-z]|xvd[a-z]|nvme\d|mmcblk\d|disk\d)"),
    _deny(_SYSTEM, "shutdown", r"\bshutdown\b"),
    _deny(_SYSTEM, "reboot", r"\breboot\b"),
    _deny(_SYSTEM, "poweroff", r"\bpoweroff\b"),
    _deny(_SYSTEM, "halt", r"(?:^|[;&|]\s*|\bsudo\s+)halt\b"),
    _deny(_SYSTEM, "init 0", r"\b(?:init|telinit)\s+[06]\b"),
    _deny(_SYSTEM, "systemctl poweroff", r"\bsystemctl\s+(?:poweroff|reboot|halt|kexec)\b"),
    _deny(_FORK, ":(){ ... };:", r":\s*\(\s*\)\s*\{[^}]*:\s*\|\s*:[^}]*\}\s*;\s*:"),
    _deny(_FORK, ":(){ ... };:", r"\b(\w+)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;\s*\1\b"),
    _deny(_REMOTE, "curl | sh", rf"\bcurl\b[^|]*\|\s*{_SH}"),
    _deny(_REMOTE, "wget -O - | sh", rf"\bwget\b[^|]*\|\s*{_SH}"),
    _deny(_REVERSE, "/dev/tcp/", r"/dev/(?:tcp|udp)(?![\w.-])"),
    _deny(_REVERSE, "/dev/tcp/", _RUN_TIME_SOCKET_PATH),
    _deny(_REVERSE, "/dev/tcp/", _both(_DESCRIPTOR_SHELL, _EXPANDED_TARGET)),
    _deny(_REVERSE, "nc -e", rf"{_NETCAT_COMMAND}{_SEG}(?:{_NETCAT_EXEC}|{_NETCAT_EXPANSION})"),
    _deny(_REVERSE, "socat exec", rf"\bsocat\b{_SEG}\b(?:exec|system|shell):", re.IGNORECASE),
    _deny(_REVERSE, "telnetd -l sh", rf"\btelnetd\b{_SEG}\s-l\s*(?!(?:\S*/)?login\b)[^\s;&|]"),
    _deny(_REVERSE, "/inet/tcp/", r"/inet[46]?/(?:tcp|udp)/"),
    _deny(_REVERSE, "ztcp", r"\bztcp\b|\bzsh/net/(?:tcp|socket)\b"),
    _deny(
        _REVERSE,
        "nc | sh",
        rf"(?:{_NETCAT_COMMAND}|\bsocat\b)[^|]*\|\s*(?:{_SHELL_SINK})|{_SUBSTITUTED_INTO_SHELL}",
    ),
    _deny(_REVERSE, "telnet | sh", rf"\btelnet\b[^|]*\|\s*(?:{_SHELL_SINK})"),
    _deny(_REVERSE, "openssl s_client | sh", rf"\bopenssl\s+s_client\b[^|]*\|\s*(?:{_SHELL_SINK})"),
    _deny(_REVERSE, "mkfifo | nc", _both(r"\bmk(?:fifo|nod)\b", _NETWORK)),
    _deny(
        _REVERSE, "sh -i + socket", _both(_INTERACTIVE_SHELL, f"{_NETWORK}|{_SOCKET_DESCRIPTOR}")
    ),
    _deny(
        _REVERSE,
        "socket + shell one-liner",
        # the words first, each in one pass: no backtracking over a long command line
        _both(_SOCKET, _PROCESS) + rf"[\s\S]*?{_INTERPRETER}{_INLINE_CODE}",
    ),
    _deny(_EVAL, "eval $()", r"\beval\s+[\"']?(?:\$\(|`)"),
    _deny(_EVAL, "base64 -d | sh", rf"\bbase64\b{_SEG}(?:-d\b|--decode\b|-D\b){_SEG}\|\s*{_SH}"),
    _deny(_FILES, "chmod -R 777 /", r"\bchmod\s+(?:-\w+\s+)*(?:-R|--recursive)\s+\S*\s+/(?:\s|$)"),
    _deny(_SYSTEM, "> /dev/mem", r">\s*/dev/(?:mem|kmem|port)\b"),
)


def _danger(
    label: str, pattern: str, flags: int = 0, anchored: bool = False, also: str | None = None
) -> CommandPattern:
    return _p("dangerous", label, pattern, flags, anchored, also)


#: A process's secrets under /proc: its environment (API keys), memory and memory map.
_PROC_SECRET = r"\b(?:environ|mem|maps|kcore)\b"


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
    # /proc however the process is named ($PPID, $$, thread-self, task/N, globs) and
    # whichever form names the file: /proc and a secret file anywhere in one command line.
    _danger("/proc/*/environ", r"\bproc\b", also=_PROC_SECRET),
    _danger("*/environ", r"(?:^|/)environ\b"),
    # A file name put together at run time under a process's folder (…/self/${E}ron).
    _danger("/proc/*/$name", r"\bproc/+[^/\s]+/+[^\s;&|]*[$`]"),
    # Inside /proc, relative names (cat mem, cat e*) slip past every path pattern.
    _danger("cd /proc", r"\b(?:cd|pushd)\s+(?:-\S+\s+)*[\"']?/+proc\b"),
    _danger("cd /proc", r"(?:\s-C\s*|--chdir[=\s]\s*|--directory[=\s]\s*)[\"']?/+proc\b"),
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
