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
#: user:password@ in a URL (postgres://app:pw@db/app): the password part.
URL_PASSWORD = re.compile(r"(?<=://)([^\s:/@]+):([^\s@/]+)@")


def is_secret_name(name: str) -> bool:
    return name not in NOT_SECRET and SECRET_NAME.search(name) is not None
