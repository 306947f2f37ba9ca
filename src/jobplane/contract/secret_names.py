"""Which environment variable names hold credentials.

One rule for the runner, which never prints such a variable's value, and for ``jobplane import``,
which never writes one into a job file (it becomes a secret reference instead): so a value the
runner would hide is never committed to a repository in the first place.
"""

from __future__ import annotations

import re

#: Words that name credentials anywhere in the name, and short ones (KEY, PWD, PASS) as whole
#: parts (STRIPE_KEY, MYSQL_PWD; not KEYBOARD_LAYOUT, nor the shell's own PWD, the working
#: directory).
SECRET_NAME = re.compile(
    r"PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|CREDENTIAL|PRIVATE|WEBHOOK|DSN|AUTH|COOKIE|SIGNATURE|"
    r"APIKEY|ACCESSKEY|(?:^|_)(?:API_|ACCESS_|SESSION_|SIGNING_|ENCRYPTION_|MASTER_)?KEYS?(?:_|$)|(?:^|_)(?:PWD|PASS)(?:_|$)",
    re.I)
#: Names the rule would match that are not credentials.
NOT_SECRET = frozenset({"PWD", "OLDPWD"})
#: ``user:password@`` in a URL, the user name possibly empty (``redis://:pw@cache``, the form
#: Redis and many brokers document): group 1 the user, group 2 the password. The password runs to
#: the last ``@`` before the host (``%40`` or a bare ``@`` in it stays in it); quotes and
#: backslashes end it, so a match never spans two JSON strings of a log line. ONE definition of
#: a secret-bearing URL (issue 50 item 7): the runner redacts what it matches, the importer
#: turns a value it matches into a secret reference. ``scheme://user@host`` holds no password.
URL_PASSWORD = re.compile(r"(?<=://)([^\s:/@\"'\\]*):([^\s/\"'\\]+)@")


def url_passwords(text: str) -> list[str]:
    """Every password embedded in a URL in ``text``, as written (percent-encoded or not)."""
    return [m.group(2) for m in URL_PASSWORD.finditer(text)]


def has_url_password(text: str) -> bool:
    """Whether ``text`` holds a URL with a password (then it is a secret, whatever its name)."""
    return URL_PASSWORD.search(text) is not None


def is_secret_name(name: str) -> bool:
    return name not in NOT_SECRET and SECRET_NAME.search(name) is not None
