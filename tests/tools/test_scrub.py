"""The scrubber against realistic secrets (redacted) and near-misses (kept)."""

from __future__ import annotations

import threading
import time

import pytest

from clawlog.tools import Scrubber
from clawlog.tools.scrub import REDACTED

A36 = "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"  # 36 alphanumerics
HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

#: (description, text, the secret that must disappear)
SECRETS: list[tuple[str, str, str]] = [
    ("openai legacy key", "key: sk-" + "T3BlbkFJ" * 4, "sk-" + "T3BlbkFJ" * 4),
    ("openai project key", "export OPENAI=sk-proj-" + "Ab1_Cd2-Ef3" * 4, "Ab1_Cd2-Ef3" * 4),
    ("openai service account key", "sk-svcacct-" + "Zz9" * 10, "Zz9" * 10),
    (
        "openai key in a sentence",
        "use sk-abcdefghijklmnopqrstuvwx123 for prod",
        "sk-abcdefghijklmnopqrstuvwx123",
    ),
    ("anthropic key", "ANTHROPIC said sk-ant-api03-" + "xY7-" * 12, "xY7-" * 12),
    ("anthropic key in json", '{"key": "sk-ant-admin01-' + "Q" * 30 + '"}', "Q" * 30),
    ("github classic pat", "token ghp_" + A36, "ghp_" + A36),
    ("github oauth token", "gho_" + A36 + " expires", "gho_" + A36),
    ("github user-to-server token", "ghu_" + A36, "ghu_" + A36),
    ("github server-to-server token", "GH=ghs_" + A36, "ghs_" + A36),
    ("github refresh token", "ghr_" + A36, "ghr_" + A36),
    (
        "github fine-grained pat",
        "github_pat_11ABCDEFG0" + "x" * 40,
        "github_pat_11ABCDEFG0" + "x" * 40,
    ),
    ("aws access key id", "aws id AKIAIOSFODNN7EXAMPLE here", "AKIAIOSFODNN7EXAMPLE"),
    ("aws temporary key id", "ASIAY34FZKBOKMUTVV7A", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws secret in ini",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("api_key=", "curl 'https://x.io/v1?api_key=9d8f7g6h5j4k'", "9d8f7g6h5j4k"),
    ("api-key header", "X-Api-Key: 0a1b2c3d4e5f6a7b", "0a1b2c3d4e5f6a7b"),
    ("apikey colon", "apikey: hunter2hunter2", "hunter2hunter2"),
    ("password=", "db password=correcthorse9 ok", "correcthorse9"),
    ("PASSWORD: upper", "PASSWORD: Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("password in json", '{"user": "bob", "password": "s3cr3t pass phrase"}', "s3cr3t pass phrase"),
    ("password in single quotes", "password='p@ss w0rd!'", "p@ss w0rd!"),
    ("secret=", "client_secret=abcDEF123456ghi", "abcDEF123456ghi"),
    ("token=", "?access_token=ya29.a0AfH6SMBx", "ya29.a0AfH6SMBx"),
    ("refresh token json", '"refresh_token":"1//0gLx-abc_DEF"', "1//0gLx-abc_DEF"),
    (
        "authorization bearer header",
        "Authorization: Bearer eyJhbGciOi.abc.def",
        "eyJhbGciOi.abc.def",
    ),
    ("authorization basic header", "authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("bare bearer", "curl -H 'bearer abcdef0123456789'", "abcdef0123456789"),
    ("private key var", "private_key=MIIEvQIBADANBgkqhkiG9w0", "MIIEvQIBADANBgkqhkiG9w0"),
    (
        "postgres url",
        "DSN is postgres://app:pw@db.internal:5432/prod",
        "postgres://app:pw@db.internal:5432/prod",
    ),
    ("postgresql url", "postgresql://user@10.0.0.5/app", "postgresql://user@10.0.0.5/app"),
    ("mysql url", "mysql://root:toor@localhost:3306/shop", "mysql://root:toor@localhost:3306/shop"),
    (
        "mongodb srv url",
        "mongodb+srv://admin:Pa55@cluster0.mongodb.net/x",
        "mongodb+srv://admin:Pa55@cluster0.mongodb.net/x",
    ),
    ("redis url", "REDIS=redis://:authpass@cache:6379/0", "redis://:authpass@cache:6379/0"),
    (
        "https url credentials",
        "git clone https://deploy:glpat-9x8y7z@gitlab.com/a/b.git",
        "deploy:glpat-9x8y7z",
    ),
    ("env KEY=", "STRIPE_KEY=pk_live_51Habc", "pk_live_51Habc"),
    ("env SECRET=", "export JWT_SECRET=supersecretvalue", "supersecretvalue"),
    ("env CREDENTIALS=", "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/key.json", "/etc/gcp/key.json"),
    (
        "env DSN=",
        "SENTRY_DSN=https://abc123@o1.ingest.sentry.io/42",
        "https://abc123@o1.ingest.sentry.io/42",
    ),
    ("env VIRTUAL_*=", "VIRTUAL_HOST=internal.example.org", "internal.example.org"),
    ("env TOKEN=", "SLACK_BOT_TOKEN=xoxb-1234-5678-abcdEFGH", "xoxb-1234-5678-abcdEFGH"),
    (
        "slack token",
        "xoxp-123456789012-123456789012-abcdef",
        "xoxp-123456789012-123456789012-abcdef",
    ),
    (
        "stripe secret key",
        "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
        "sk_live_4eC39HqLyjWDarjtT1zdp7dc",
    ),
    (
        "google api key",
        "AIzaSyA-1234567890abcdefghijklmnopqrstu",
        "AIzaSyA-1234567890abcdefghijklmnopqrstu",
    ),
    (
        "jwt",
        "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    ("64-hex encryption key", "ENC " + HEX64, HEX64),
    ("128-hex key", "k=" + HEX64 + HEX64, HEX64),
    (
        "pem private key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n"
        "-----END RSA PRIVATE KEY-----",
        "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu",
    ),
]

#: Secrets as a tool prints them, each checked inside a line of output.
PRINTED_SECRETS: list[str] = [
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7cDe0fGh3iJk6l",
    "sk-1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJ",
    "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijklmnopQRSTUV-abcdefAA",
    "sk-ant-admin01-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210zyxwvutsrqponmLKJIHG",
    "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "gho_16C7e42F292c6912E7710c838347Ae178B4a",
    "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
    "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
    "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ012",
    "ASIAJEXAMPLEXEG2JICE",
    "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "api_key=9f8e7d6c5b4a39281706f5e4d3c2b1a0",
    "apikey: 8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
    "API_KEY=abcd1234efgh5678ijkl9012mnop3456",
    "secret=Sup3rS3cr3tValue!2024xyz",
    "client_secret: 0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d",
    "password=CorrectHorseBatteryStaple99",
    "passwd: hunter2hunter2hunter2",
    "token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjMifQ.abcDEF123ghiJKL456",
    "access_token=ya29.a0AfH6SMBx3exampleexampleexampleexample",
    "auth_token: 7f3c9a1b2d4e6f8a0b1c2d3e4f5a6b7c",
    "Authorization: Bearer eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9.payload.signature123",
    "postgres://admin:s3cretpass@db.internal:5432/app",
    "postgresql://user:p4ssw0rd@10.0.0.5/clawlog",
    "mysql://root:rootpass123@localhost:3306/shop",
    "mongodb+srv://app:Mong0Pass!@cluster0.example.net/db",
    "redis://:r3disPassw0rd@cache:6379/0",
    "amqp://guest:guestpass99@rabbit:5672/",
    "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz0123456789ABCDEF",
    "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789-ABCDEFGH",
    "GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a",
    "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DATABASE_URL=postgres://app:hunter2pw@db:5432/app",
    "SLACK_BOT_TOKEN=xoxb-not-a-real-token-value-0000",
    "STRIPE_SECRET_KEY=sk_live_not_a_real_key_0000000000000000",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "private_key=MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
]


def _secret_in(printed: str) -> str:
    """The value after ``=`` or ``: ``; for a connection string, its password."""
    value = printed.split("=", 1)[-1].split(": ", 1)[-1]
    return value.split("@")[0].split(":")[-1] if "://" in value else value


ALL_SECRETS = SECRETS + [(p, f"result: {p} (end)", _secret_in(p)) for p in PRINTED_SECRETS]

#: Text that looks close to a secret but is not one: it must come through unchanged.
NEAR_MISSES: list[str] = [
    "the risk-assessment-quarterly-report-2024 is due",
    "sk-short is not a key",
    "task-1234567890abcdefghijklmnop finished",
    "ghp_tooShort123",
    "AKIA1234 is too short for an AWS key",
    "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 fixed it",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "max_tokens=4096 temperature=0.2",
    "Tokens: 125,000 / 200,000 (62.5%)",
    "input_tokens: 512, output_tokens: 64",
    "The password is incorrect, please try again.",
    "Forgot your password? Reset it from settings.",
    "secretary: Jane Doe",
    "MONKEY=banana",
    "KEYBOARD_LAYOUT=us",
    "use a postgres:// URL for the database",
    "https://example.com/docs?page=2",
    "see http://localhost:8080/health",
    "sha1 da39a3ee5e6b4b0d3255bfef95601890afd80709",
    "deadbeef" * 7 + " (56 hex chars)",
    "mkdir -p build && make test",
    "Bearer tokens are described in RFC 6750",
    "the tokenizer splits words",
    "an email: someone@example.com",
    "ssh user@host.example.com",
    "[REDACTED] already",
    "the task is done",
    "sk-short",
    "skate-boarding is fun",
    "ghp_short",
    "AKIA is a prefix we look for",
    "password reset link sent",
    "the token count was 1234",
    "api key rotation is scheduled for Monday",
    "https://db.example.com/app",
    "file:///tmp/clawlog.db",
    "deadbeef",
    "0123456789abcdef0123456789abcdef",
    "commit 1a2b3c4d5e6f",
    "user=alice",
    "secret of the universe is 42",
    "run `git push origin main`",
    "the price is 4,000,000 USD",
    "key=value pairs are configurable",
    "my email is ann@example.com",
    "version 2.4.1-beta",
]


@pytest.mark.parametrize(("text", "secret"), [pytest.param(t, s, id=d) for d, t, s in ALL_SECRETS])
def test_a_realistic_secret_is_redacted(text: str, secret: str) -> None:
    scrubbed = Scrubber().scrub(text)
    assert scrubbed != text
    assert REDACTED in scrubbed
    assert secret not in scrubbed
    assert secret[-12:] not in scrubbed  # not even a recognisable tail is left


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_a_near_miss_survives_unchanged(text: str) -> None:
    assert Scrubber().scrub(text) == text


def test_the_suites_are_as_large_as_required() -> None:
    assert len(SECRETS) >= 40
    assert len(NEAR_MISSES) >= 20


def test_key_value_scrubbing_keeps_the_key_and_the_quotes() -> None:
    scrubber = Scrubber()
    assert scrubber.scrub("password=hunter22") == "password=[REDACTED]"
    assert scrubber.scrub('{"api_key": "abc 123"}') == '{"api_key": "[REDACTED]"}'
    assert scrubber.scrub("OPENAI_API_KEY=abc123") == "OPENAI_API_KEY=[REDACTED]"


@pytest.mark.parametrize(("description", "text", "secret"), SECRETS[:12] + SECRETS[-8:])
def test_scrubbing_is_idempotent(description: str, text: str, secret: str) -> None:
    scrubber = Scrubber()
    once = scrubber.scrub(text)
    assert scrubber.scrub(once) == once


def test_dynamic_values_are_redacted_once_registered() -> None:
    scrubber = Scrubber()
    text = "connect to 203.0.113.77 with tenant acme-corp-prod"
    assert scrubber.scrub(text) == text
    scrubber.add_values("203.0.113.77", "acme-corp-prod")
    assert scrubber.scrub(text) == f"connect to {REDACTED} with tenant {REDACTED}"
    scrubber.remove_values("acme-corp-prod")
    assert scrubber.scrub(text) == f"connect to {REDACTED} with tenant acme-corp-prod"
    scrubber.remove_values("203.0.113.77")  # the last one: nothing dynamic is left
    assert scrubber.scrub(text) == text


def test_a_longer_dynamic_value_wins_over_its_prefix() -> None:
    scrubber = Scrubber(["abcd", "abcdefgh"])
    assert scrubber.scrub("xx abcdefgh yy") == f"xx {REDACTED} yy"


def test_values_too_short_to_scrub_safely_are_ignored() -> None:
    scrubber = Scrubber(["ab", "  x "])
    assert scrubber.values_count == 0
    assert scrubber.scrub("ab cab") == "ab cab"


def test_dynamic_values_can_be_added_while_other_threads_scrub() -> None:
    scrubber = Scrubber()
    errors: list[BaseException] = []
    start = threading.Barrier(5)

    def scrub_loop() -> None:
        try:
            start.wait()
            for _ in range(300):
                scrubber.scrub("value-0001 value-0150 plain text")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def add_loop() -> None:
        start.wait()
        for i in range(200):
            scrubber.add_values(f"value-{i:04d}")

    threads = [threading.Thread(target=scrub_loop) for _ in range(4)]
    threads.append(threading.Thread(target=add_loop))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert scrubber.values_count == 200
    assert scrubber.scrub("value-0001 value-0150") == f"{REDACTED} {REDACTED}"


def test_structured_values_are_scrubbed_by_content_and_by_key_name() -> None:
    value = {
        "query": "select 1",
        "password": "hunter2",
        "pin": 1234,
        "headers": [{"Authorization": "Bearer abcdefghijk"}, {"x": "sk-" + "a" * 30}],
        "nested": {"db_password": 99, "max_tokens": 4096, "verbose": True},
    }
    scrubbed = Scrubber().scrub_value(value)
    assert scrubbed["query"] == "select 1"
    assert scrubbed["password"] == REDACTED
    assert scrubbed["pin"] == 1234
    assert scrubbed["headers"][0]["Authorization"] == REDACTED
    assert scrubbed["headers"][1]["x"] == REDACTED
    assert scrubbed["nested"] == {"db_password": REDACTED, "max_tokens": 4096, "verbose": True}


def test_find_names_the_patterns_that_match() -> None:
    scrubber = Scrubber(["10.1.2.3"])
    assert scrubber.find("AKIAIOSFODNN7EXAMPLE at 10.1.2.3") == ["dynamic", "aws_access_key"]
    assert scrubber.find("nothing here") == []


AWS4 = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-date, "
    "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
)
DIGEST = (
    'Digest username="Mufasa", realm="http-auth@example.org", uri="/dir/index.html", '
    'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", '
    'response="8ca523f5e9506fed4657c9700eebdbec"'
)

#: (description, text, the scheme that stays, a credential that must disappear).
AUTHORIZATION_HEADERS: list[tuple[str, str, str, str]] = [
    ("ApiKey", "Authorization: ApiKey k3y-0f-the-service", "ApiKey", "k3y-0f-the-service"),
    ("Bearer", "Authorization: Bearer abc.def.ghi", "Bearer", "abc.def.ghi"),
    ("short bearer", "Authorization: Bearer abc", "Bearer", "abc"),
    ("Basic", "authorization: Basic dXNlcjpwYXNz", "Basic", "dXNlcjpwYXNz"),
    ("Token", "Authorization: Token 9944b09199c62bcf", "Token", "9944b09199c62bcf"),
    ("Digest with its parameters", "Authorization: " + DIGEST, "Digest", "8ca523f5e9506fed"),
    ("Digest keeps no parameter", "Authorization: " + DIGEST, "Digest", "Mufasa"),
    ("AWS SigV4 credential", "Authorization: " + AWS4, "AWS4-HMAC-SHA256", "AKIDEXAMPLE"),
    ("AWS SigV4 signature", "Authorization: " + AWS4, "AWS4-HMAC-SHA256", "5d672d79c15b"),
    ("custom scheme", "Authorization: Splunk 8f4e1a2b-cafe", "Splunk", "8f4e1a2b-cafe"),
    ("no scheme at all", "Authorization: 8f4e1a2bcafe", "Authorization", "8f4e1a2bcafe"),
    ("Proxy-Authorization", "Proxy-Authorization: Basic YWxhZGRpbjpvcGVu", "Basic", "YWxhZGRp"),
    ("X-*-Authorization", "X-Upstream-Authorization: ApiKey up-42-xyz", "ApiKey", "up-42-xyz"),
    ("no space after colon", "Authorization:ApiKey tight-k3y", "ApiKey", "tight-k3y"),
    (
        "curl -H single quotes",
        "curl -H 'Authorization: ApiKey curl-k3y-9' -H 'Accept: */*' https://api.example.com",
        "ApiKey",
        "curl-k3y-9",
    ),
    (
        "curl -H double quotes with a Digest",
        'curl -H "Authorization: Digest username=\\"bob\\", response=\\"f00dcafe\\"" https://x',
        "Digest",
        "f00dcafe",
    ),
    (
        "raw HTTP request",
        "GET /v1/items HTTP/1.1\r\nHost: api.example.com\r\nAuthorization: ApiKey raw-k3y\r\n\r\n",
        "ApiKey",
        "raw-k3y",
    ),
    ("JSON entry", '{"Authorization": "ApiKey json-k3y", "Accept": "*/*"}', "ApiKey", "json-k3y"),
    (
        "JSON inside a JSON string",
        '"{\\"Authorization\\": \\"ApiKey nested-k3y\\"}"',
        "ApiKey",
        "nested-k3y",
    ),
    ("python dict repr", "{'authorization': 'ApiKey dict-k3y'}", "ApiKey", "dict-k3y"),
    ("log key=value", "authorization='Bearer log-t0ken-1' status=401", "Bearer", "log-t0ken-1"),
    # a credential another pattern redacted in part still loses the rest
    (
        "AWS Signature V2",
        "Authorization: AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg=",
        "AWS",
        "frJIUN8DYpKDtOLCwo",
    ),
    ("after a token", "Authorization: token ghp_" + A36 + " extra-secret", "token", "extra-secret"),
    # the value on the next line: quoted, or indented (YAML)
    (
        "JSON value on the next line",
        '"Authorization":\n  "ApiKey abcdef123456"',
        "ApiKey",
        "abcdef",
    ),
    ("YAML value on the next line", "Authorization:\n  ApiKey abcdef123456", "ApiKey", "abcdef"),
    # name/value pairs
    ("header tuple", "[('Authorization', 'ApiKey abcdef123456')]", "ApiKey", "abcdef"),
    ("bytes header tuple", "(b'authorization', b'ApiKey abcdef123456')", "ApiKey", "abcdef"),
]


@pytest.mark.parametrize(
    ("text", "scheme", "credential"),
    [pytest.param(t, s, c, id=d) for d, t, s, c in AUTHORIZATION_HEADERS],
)
def test_every_authorization_scheme_loses_its_credential_and_keeps_its_name(
    text: str, scheme: str, credential: str
) -> None:
    scrubber = Scrubber()
    scrubbed = scrubber.scrub(text)
    assert credential not in scrubbed
    assert f"{scheme} {REDACTED}" in scrubbed or f"{scheme}: {REDACTED}" in scrubbed
    assert scrubber.scrub(scrubbed) == scrubbed


def test_an_authorization_header_redacts_only_up_to_the_end_of_its_value() -> None:
    scrubber = Scrubber()
    curl = "curl -H 'Authorization: ApiKey k-1' -H 'Accept: text/plain' https://x.io"
    assert scrubber.scrub(curl) == (
        f"curl -H 'Authorization: ApiKey {REDACTED}' -H 'Accept: text/plain' https://x.io"
    )
    request = "Authorization: Digest a=1, b=2\r\nHost: x.io\r\n"
    assert scrubber.scrub(request) == f"Authorization: Digest {REDACTED}\r\nHost: x.io\r\n"
    payload = '{"Authorization": "Token t-1", "page": 2}'
    assert scrubber.scrub(payload) == f'{{"Authorization": "Token {REDACTED}", "page": 2}}'


def test_an_authorization_header_loses_what_follows_a_registered_value() -> None:
    scrubber = Scrubber(["10.1.2.3"])
    scrubbed = scrubber.scrub("Authorization: Custom 10.1.2.3:supersecret")
    assert scrubbed == f"Authorization: Custom {REDACTED}"
    assert scrubber.scrub(scrubbed) == scrubbed


def test_an_unquoted_value_of_a_quoted_key_ends_at_the_next_entry() -> None:
    payload = '{"authorization": null, "model": "gpt-4", "text": "hello"}'
    scrubbed = Scrubber().scrub(payload)
    assert scrubbed == f'{{"authorization": {REDACTED}, "model": "gpt-4", "text": "hello"}}'
    assert Scrubber().scrub(scrubbed) == scrubbed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Cookie: session=abcdef123456; theme=dark", f"Cookie: {REDACTED}"),
        ("Set-Cookie: sid=abcdef123456; Path=/; HttpOnly", f"Set-Cookie: {REDACTED}"),
        ('{"Cookie": "sid=abc123", "x": 1}', f'{{"Cookie": "{REDACTED}", "x": 1}}'),
        ("curl -H 'Cookie: sid=abc123' https://x", f"curl -H 'Cookie: {REDACTED}' https://x"),
        ("the cookie: is set by the login page", "the cookie: is set by the login page"),
    ],
)
def test_cookie_values_are_redacted(text: str, expected: str) -> None:
    scrubber = Scrubber()
    assert scrubber.scrub(text) == expected
    assert scrubber.scrub(expected) == expected


#: Long runs of word characters and separators, where a pattern that may start anywhere
#: in the run and scan to its end takes quadratic time (``"a-" * 50000`` took minutes).
LONG_RUNS = {
    "a-": "a-" * 100_000,
    "a.": "a." * 100_000,
    "base64url": ("Zm9vYmFy-_" * 20_000),
    "kebab-case": "some-kebab-case-word-" * 10_000,
    "KEY_": "KEY_" * 50_000,
}


@pytest.mark.parametrize("text", LONG_RUNS.values(), ids=LONG_RUNS.keys())
def test_scrubbing_a_long_run_takes_linear_time(text: str) -> None:
    # Linear time is ~0.1 s for 200 KB here; the bound is generous for a busy machine,
    # and only a quadratic pattern (tens of seconds and more) reaches it.
    started = time.perf_counter()
    Scrubber().scrub(text)
    assert time.perf_counter() - started < 5.0


@pytest.mark.parametrize(
    "text",
    [
        "the Authorization header is required",
        "authorization failed for user bob",
        "Proxy-Authorization is hop-by-hop",
    ],
)
def test_prose_about_authorization_is_not_redacted(text: str) -> None:
    assert Scrubber().scrub(text) == text


#: Env-style assignments that describe a quantity: a quantity word in the name and a
#: plain number as the value. Built from the words, so the class is tested, not four strings.
QUANTITY_ASSIGNMENTS = [
    f"{name}={value}"
    for name in (
        "KEY_COUNT",
        "SECRET_LENGTH",
        "TOKEN_TTL",
        "PASSWORD_MIN_LENGTH",
        "API_KEY_MAX_AGE",
        "JWT_SECRET_ROTATION_DAYS",
        "SESSION_TOKEN_TIMEOUT",
        "MAX_TOKEN_RETRIES",
        "RSA_KEY_SIZE",
        "KEY_BITS",
    )
    for value in ("3", "32", "3600", "8", "1.5", "3600s", "24h", "10ms")
]


@pytest.mark.parametrize("text", QUANTITY_ASSIGNMENTS)
def test_an_env_assignment_describing_a_quantity_is_kept(text: str) -> None:
    scrubber = Scrubber()
    assert scrubber.scrub(text) == text
    assert scrubber.scrub(f"export {text} # from .env") == f"export {text} # from .env"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("API_KEY=sk-abc", "sk-abc"),
        ("DB_PASSWORD=hunter2hunter2", "hunter2hunter2"),
        ("SECRET=abc123def456", "abc123def456"),
        ("DB_PASSWORD=12345678", "12345678"),  # a number, but no quantity word: a PIN-like secret
        ("API_KEY=3", "=3"),
        ("TOKEN_TTL=abc123", "abc123"),  # a quantity name, but not a number
        ("KEY_COUNT=3x4y5z", "3x4y5z"),
        ("SECRET_LENGTH=32characters", "32characters"),
        ("ACCOUNT_KEY=42", "=42"),  # ACCOUNT is not COUNT: the quantity word must be a word
        # a quantity name, but a number too long to be a quantity, or no real unit
        ("TOKEN_MAX=1234567890123456789012345678901234", "1234567890123456789012345678901234"),
        ("API_KEY_MIN=12345678", "12345678"),
        ("SECRET_MS=12345678ab", "12345678ab"),
        ("TOKEN_TTL=3600zz", "3600zz"),
    ],
)
def test_an_env_assignment_holding_a_value_is_still_redacted(text: str, secret: str) -> None:
    scrubbed = Scrubber().scrub(text)
    assert REDACTED in scrubbed
    assert secret not in scrubbed


def test_a_key_at_the_end_of_a_text_does_not_take_the_next_line() -> None:
    # A fetched page ending in "api_key:" must not redact the wrapper's closing tag.
    text = "docs say: api_key:\n</external_content>"
    assert Scrubber().scrub(text) == text


def test_a_yaml_value_on_the_next_indented_line_is_still_redacted() -> None:
    assert Scrubber().scrub("password:\n  hunter2hunter2") == "password:\n  [REDACTED]"
