#!/usr/bin/env bash
# `make test`'s set-up: the programs the suite runs besides Python (as .ci/run installs them).
# Installs what is missing when it may (root, or sudo without a password, and apt-get); else
# stops at once with the exact command to run. Browser tests are skipped only when asked
# (JOBPLANE_SKIP_BROWSER_TESTS=1): then chromium is not needed.
set -euo pipefail

need=()  # Debian packages
command -v jsonnetfmt >/dev/null || need+=(jsonnet)  # jobplane import's files are checked against jsonnetfmt
command -v node >/dev/null || need+=(nodejs)         # the pipeline's PR-comment script is run as GitHub runs it
if [ "${JOBPLANE_SKIP_BROWSER_TESTS:-}" != 1 ] && ! command -v chromium >/dev/null && [ -z "${JOBPLANE_CHROMIUM:-}" ]; then
  need+=(chromium)                                   # the portal's browser tests (Playwright drives it)
fi
[ ${#need[@]} -eq 0 ] && exit 0

echo "make test: missing programs the tests run: ${need[*]} (Debian packages)"
if command -v apt-get >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    sudo=none
  fi
  if [ "${sudo[*]:-}" != none ]; then
    echo "make test: installing them: ${sudo[*]:-}apt-get install -y ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" apt-get install -y -qq "${need[@]}"
    exit 0
  fi
fi
cat >&2 <<EOF
make test: cannot install them here (not root, no password-less sudo, or no apt-get). Run:

    sudo apt-get install -y ${need[*]}

then \`make test\` again$( [[ " ${need[*]} " == *" chromium "* ]] && echo "; or, to run without the portal's browser tests on purpose: make test JOBPLANE_SKIP_BROWSER_TESTS=1" ).
EOF
exit 1
