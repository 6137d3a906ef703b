"""An application's mistakes in a ``WebPolicy`` are a ``PolicyError`` naming the field and
what to write, when the policy is made: a bare string for a tuple (msgspec does not check
types of a Struct built in Python, so it was read one character at a time), values of the
wrong type, and an allow-list entry the guard would always refuse."""

from __future__ import annotations

from typing import Any

import pytest

from clawlog.tools import PolicyError
from clawlog.tools.web import WebPolicy


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"allow_hosts": "docs.python.org"}, "WebPolicy.allow_hosts must be a tuple of strings"),
        ({"deny_hosts": "evil.example"}, "WebPolicy.deny_hosts must be a tuple of strings"),
        ({"schemes": "https"}, "WebPolicy.schemes must be a tuple of strings such as ('https',)"),
        ({"allow_hosts": ("a.example", 3)}, "must hold strings only"),
        ({"timeout_s": "30"}, "WebPolicy.timeout_s must be a number of seconds, not '30'"),
        ({"max_bytes": 1.5}, "WebPolicy.max_bytes must be an int"),
        ({"max_redirects": None}, "WebPolicy.max_redirects must be an int"),
        ({"allow_loopback": "yes"}, "allow_loopback must be True or False"),
    ],
)
def test_a_field_of_the_wrong_type_is_named(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(")", r"\)")):
        WebPolicy(**kwargs)


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        ("10.0.0.5", "private"),
        ("169.254.169.254", "link-local"),
        ("0x7f000001", "loopback"),
        ("[::ffff:10.0.0.1]", "form of 10.0.0.1"),
        ("localhost", "names this machine"),
    ],
)
def test_an_allowed_host_the_guard_always_refuses_is_a_mistake(host: str, reason: str) -> None:
    with pytest.raises(PolicyError, match=r"allow_hosts holds '.*', which the web tools never"):
        WebPolicy(allow_hosts=(host,))
    with pytest.raises(PolicyError, match=reason):
        WebPolicy(allow_hosts=("docs.example", host))


def test_loopback_may_be_allowed_by_name_or_address_with_allow_loopback() -> None:
    policy = WebPolicy(allow_loopback=True, allow_hosts=("127.0.0.1", "localhost", "[::1]"))
    assert policy.allow_hosts == ("127.0.0.1", "localhost", "[::1]")
    assert WebPolicy(allow_hosts=["docs.example", "*.internal.example"]).allow_hosts == [
        "docs.example",
        "*.internal.example",
    ]
    assert WebPolicy(deny_hosts=("10.0.0.5",)).deny_hosts == ("10.0.0.5",)
