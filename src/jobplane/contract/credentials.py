"""What in a literal looks like a credential: a password in a URL, a token with a known prefix,
an option or header that carries one, an assignment to a credential-named variable.

One rule for ``jobplane import`` (which never writes such a value into a job file: it becomes a
secret reference, or the entry is refused naming what it found) and for ``jobplane validate``
(which warns about one written by hand), beside contract/secret_names.py's rule for names. Every
finding says *what* was found and *where* (the option, the header, the variable), never the value:
the messages go to terminals, reports and pull-request comments.

A value that is itself a reference (``$PGPASSWORD``, ``${TOKEN}``, ``$(cat /run/secret)``) is
not a credential: the value is read at run time from somewhere else.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from jobplane.contract.secret_names import URL_PASSWORD, is_secret_name

#: Tokens whose prefix says what they are (each issuer documents its format):
#: AWS access key ids (AKIA long-term, ASIA temporary: "Understanding unique ID prefixes",
#: https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html#identifiers-prefixes),
#: GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_: "About authentication to GitHub",
#: https://docs.github.com/en/authentication/keeping-your-account-and-data-secure/about-authentication-to-github#githubs-token-formats),
#: Slack tokens (xoxb-, xoxp-, xoxa-, xoxr-, xoxs-: https://api.slack.com/concepts/token-types),
#: Stripe secret and restricted keys (sk_live_, rk_live_, sk_test_: https://docs.stripe.com/keys),
#: GitLab personal access tokens (glpat-), Google API keys (AIza), SendGrid keys (SG.), npm (npm_).
TOKEN_PREFIXES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id (AKIA...)", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("a GitHub token (ghp_...)", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})")),
    ("a Slack token (xoxb-...)", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Stripe key (sk_live_...)", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}")),
    ("a GitLab token (glpat-...)", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),
    ("a Google API key (AIza...)", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b")),
    ("a SendGrid key (SG. ...)", re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),
    ("an npm token (npm_...)", re.compile(r"\bnpm_[A-Za-z0-9]{30,}")),
)
#: HTTP headers that carry a credential (curl's ``-H 'Authorization: Bearer ...'``).
_HEADER = re.compile(r"(?i)\b(authorization|proxy-authorization|x-api-key|api-key|apikey|x-auth-token|"
                     r"private-token|x-[a-z-]*(?:token|secret|key)|cookie)\s*:\s*(?:(?:bearer|basic|token)\s+)?(\S+)")
#: A URL's query parameter named like a credential (``...&token=542345872345734``, the FreshRSS
#: online cron's form).
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_QUERY = re.compile(r"[?&]([A-Za-z_][A-Za-z0-9_.-]*)=([^&\s'\"#]*)")
#: ``NAME=value`` (an inline assignment, ``env NAME=value``, a ``--name=value`` option's tail).
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
#: ``--password=VALUE`` / ``--api-key VALUE``: an option named like a credential.
_OPTION = re.compile(r"^--?([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?$", re.S)
#: Options named like a credential whose value is not one (a path to it, its name).
_NOT_A_VALUE = re.compile(r"(?i)(?:file|path|dir|env|stdin|cmd|command|name|id|length|type|prompt)$")
#: curl's ``-u user:password`` / ``--user`` (and wget's, httpie's): only after one of these
#: programs (``docker exec -u www-data:www-data`` names a user and a group).
_USER_OPTIONS = frozenset({"-u", "--user", "--proxy-user", "-U"})
_USER_PROGRAMS = frozenset({"curl", "wget", "http", "https", "lynx"})
#: Options that take a credential as the next word (``--password VALUE``); any other option
#: named like one is read only in its ``--name=VALUE`` form (``pg_dump --no-password DB``,
#: ``--password-stdin`` take none).
_VALUE_OPTIONS = frozenset({"--password", "--passwd", "--pass", "--token", "--api-key", "--apikey", "--secret",
                            "--access-token", "--auth-token", "--client-secret", "--secret-key", "--access-key",
                            "--private-key", "--webhook", "--webhook-url"})


@dataclass(frozen=True)
class Finding:
    """A credential found in a literal: what it is (never its value), and the value, for the
    importer to turn into a secret (never printed)."""

    what: str
    value: str

    def __str__(self) -> str:
        return self.what


def is_reference(value: str) -> bool:
    """A value read at run time from somewhere else (``$X``, ``${X}``, ``$(...)``, backquotes)."""
    v = value.strip().strip("'\"")
    return v.startswith("$") or v.startswith("`") or v == ""


def in_text(text: str) -> list[Finding]:
    """Credentials anywhere in ``text``: a URL's password, a token with a known prefix, a
    header carrying one."""
    found: list[Finding] = []
    for m in URL_PASSWORD.finditer(text):
        if not is_reference(m.group(2)):
            found.append(Finding("a URL with a password", m.group(2)))
    for what, pattern in TOKEN_PREFIXES:
        found.extend(Finding(what, m.group(0)) for m in pattern.finditer(text))
    for m in (q for url in _URL.finditer(text) for q in _QUERY.finditer(url.group(0))):
        if m.group(2) and is_secret_name(m.group(1).replace("-", "_").replace(".", "_")) and not is_reference(m.group(2)):
            found.append(Finding(f"the URL parameter {m.group(1)}", m.group(2)))
    for m in _HEADER.finditer(text):
        value = m.group(2).rstrip("'\"")
        if not is_reference(value):
            found.append(Finding(f"the {m.group(1)} header", value))
    return found


def in_words(words: list[str] | tuple[str, ...]) -> list[Finding]:
    """Credentials in an argv (or a shell line's words): :func:`in_text` of each word, and the
    options and assignments that carry one (``--password=x``, ``--token x``, ``curl -u user:pw``,
    ``PGPASSWORD=x``)."""
    found: list[Finding] = []
    for i, word in enumerate(words):
        found.extend(in_text(word))
        nxt = words[i + 1] if i + 1 < len(words) else None
        assignment = _ASSIGNMENT.match(word)
        if assignment and is_secret_name(assignment.group(1)) and not is_reference(assignment.group(2)):
            found.append(Finding(f"the variable {assignment.group(1)}", assignment.group(2)))
            continue
        if word in _USER_OPTIONS and nxt is not None and ":" in nxt and not is_reference(nxt.partition(":")[2]) \
                and any(w.rsplit("/", 1)[-1] in _USER_PROGRAMS for w in words[:i]):
            found.append(Finding(f"a password given to {word}", nxt.partition(":")[2]))
            continue
        option = _OPTION.match(word)
        if option is None:
            continue
        name = option.group(1).replace("-", "_")
        if not is_secret_name(name) or _NOT_A_VALUE.search(name) or name.lower().startswith("no_"):
            continue
        value = option.group(2) if option.group(2) is not None else (
            nxt if nxt is not None and not nxt.startswith("-") and word in _VALUE_OPTIONS else None)
        if value and not is_reference(value):
            found.append(Finding(f"the option {word.partition('=')[0]}", value))
    return _unique(found)


def in_shell(text: str) -> list[Finding]:
    """Credentials in a shell command line: its words (split as the shell would, roughly: a line
    shlex cannot split is searched as text and by whitespace)."""
    try:
        words = shlex.split(text, comments=False)
    except ValueError:
        words = text.split()
    return _unique(in_text(text) + in_words(words))


def _unique(found: list[Finding]) -> list[Finding]:
    seen: set[str] = set()
    out = []
    for f in found:
        if f.value not in seen:
            seen.add(f.value)
            out.append(f)
    return out
