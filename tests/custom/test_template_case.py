"""A ``case`` inside ``$(...)``: its patterns' ``)`` used to close the parser's ``$(`` early,
so a quote inside the substitution was taken for the end of the outer double quotes and a
placeholder after it became ``""${1}""``: unquoted to the shell, the value was split into
words and globbed (``/*`` listed the root folder), while the display form showed it quoted.
Such a template is now refused when it is defined."""

from __future__ import annotations

import pytest

from clawlog.tools.custom.template import CommandTemplate
from clawlog.tools.errors import InvalidCustomTool


@pytest.mark.parametrize(
    "command",
    [
        'echo "$(case a in a) printf %s "{{.v}}" ;; esac)"',
        "x=$(case a in a) echo {{.v}};; esac)",
        "echo $(if true; then\ncase a in a) echo {{.v}};; esac; fi)",
    ],
)
def test_a_case_inside_a_command_substitution_is_refused(command: str) -> None:
    with pytest.raises(InvalidCustomTool, match=r"case statement inside \$\(\.\.\.\)"):
        CommandTemplate(command)


@pytest.mark.parametrize(
    "command",
    [
        "case {{.v}} in a) echo a;; *) echo other;; esac",
        'echo "$(printf %s {{.v}})" showcase',
        "echo $(lowercase {{.v}})",
    ],
)
def test_a_case_outside_a_command_substitution_still_works(command: str) -> None:
    rendering = CommandTemplate(command).render({"v": "two words"})
    assert rendering.argv == ("two words",)
