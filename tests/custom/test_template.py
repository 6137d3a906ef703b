"""Command templates: where a placeholder may stand, what the script and the display form
are, and that both make the shell see the same words."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clawlog.tools.custom import CommandTemplate
from clawlog.tools.errors import InvalidCustomTool

#: Text an argument may hold: anything but NUL (and lone surrogates, which no argv holds).
ARGUMENT_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


def test_each_placeholder_becomes_a_quoted_positional_parameter() -> None:
    template = CommandTemplate('dig +short {{.type}} {{ .domain }} --note="for {{.domain}}"')
    assert template.keys == ("type", "domain")
    rendering = template.render({"type": "MX", "domain": "a b;c"})
    assert rendering.script == 'dig +short "${1}" "${2}" --note="for ${2}"'
    assert rendering.argv == ("MX", "a b;c")
    assert rendering.display == "dig +short MX 'a b;c' --note=\"for a b;c\""


def test_an_absent_argument_drops_a_whole_word_and_empties_part_of_one() -> None:
    template = CommandTemplate("dig +short {{.type}} {{.domain}} --tag={{.type}}")
    rendering = template.render({"type": None, "domain": "example.com"})
    assert rendering.script == 'dig +short  "${2}" --tag="${1}"'
    assert rendering.argv == ("", "example.com")
    assert rendering.display == "dig +short  example.com --tag=''"


def test_a_redirection_target_is_never_dropped() -> None:
    rendering = CommandTemplate("sort > {{.out}}").render({})
    assert rendering.script == 'sort > "${1}"'


def test_placeholders_inside_command_substitutions_and_nested_quotes() -> None:
    template = CommandTemplate('echo "$(printf %s {{.a}} "x{{.b}}")" `date`')
    rendering = template.render({"a": "1", "b": "2"})
    assert rendering.script == 'echo "$(printf %s "${1}" "x${2}")" `date`'


@pytest.mark.parametrize(
    ("command", "fragment"),
    [
        ("echo '{{.a}}'", "inside single quotes"),
        ("echo `echo {{.a}}`", "inside backquotes"),
        ("echo ${x:-{{.a}}}", "inside ${...}"),
        ("echo $(( {{.a}} + 1 ))", "shell arithmetic"),
        ("echo ${{.a}}", "follows a $"),
        ("echo hi # {{.a}}", "in the comment"),
        ("cat <<EOF\n{{.a}}\nEOF", "after a here-document"),
        ("echo {{a}}", "only {{.name}} placeholders exist"),
        ("echo {{.a.b}}", "only {{.name}} placeholders exist"),
        ("echo {{ if .a }}", "only {{.name}} placeholders exist"),
        ("echo 'open {{.a}}", "inside single quotes"),
        ('echo "open', 'a " quote is never closed'),
        ("echo $(date", "a $( has no matching )"),
        ("", "not empty"),
        ("echo \x00", "NUL"),
    ],
)
def test_a_placeholder_that_could_not_stay_one_word_is_refused(command: str, fragment: str) -> None:
    with pytest.raises(InvalidCustomTool) as caught:
        CommandTemplate(command)
    assert caught.value.parameter == "command"
    assert fragment in str(caught.value)


def _sh(*argv: str) -> bytes:
    done = subprocess.run(["/bin/sh", *argv], capture_output=True, timeout=60, check=True)
    return done.stdout


#: (template, what it prints for a and b)
TEMPLATES: list[tuple[str, Callable[[str, str], str]]] = [
    (
        "printf '<%s>\\n' {{.a}} x{{.b}}y \"in {{.a}} quotes\"",
        lambda a, b: f"<{a}>\n<x{b}y>\n<in {a} quotes>\n",
    ),
    (
        "printf '<%s>\\n' \"$(printf '%s|' {{.a}} \"{{.b}}\")\" --",
        lambda a, b: f"<{a}|{b}|>\n<-->\n",
    ),
    (
        "printf '<%s>\\n' \"${0:+h}\"{{.a}} `printf x` \\{{.b}}",
        lambda a, b: f"<h{a}>\n<x>\n<{{{{.b}}}}>\n",
    ),
    ("if true; then printf '<%s>\\n' {{.b}}; fi | cat", lambda a, b: f"<{b}>\n"),
]


@settings(deadline=None, max_examples=40)
@given(a=ARGUMENT_TEXT, b=ARGUMENT_TEXT, case=st.sampled_from(TEMPLATES))
def test_the_display_form_makes_the_shell_see_the_same_words(
    a: str, b: str, case: tuple[str, Callable[[str, str], str]]
) -> None:
    template, printed = case
    rendering = CommandTemplate(template).render({"a": a, "b": b})
    ran = _sh("-c", rendering.script, "sh", *rendering.argv)
    shown = _sh("-c", rendering.display)
    assert ran == shown == printed(a, b).encode()
