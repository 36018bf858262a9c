#!/usr/bin/env bash
# CI: Debian's chromium and chromium-driver for the browser tests (tests/browser), from apt;
# Selenium drives them and downloads no browser. Does nothing when both are installed.
set -euo pipefail

if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    chromium --version
    chromedriver --version
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    SUDO=sudo
else
    SUDO=
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    chromium chromium-driver
chromium --version
chromedriver --version
