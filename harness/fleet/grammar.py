"""The grammar of every value a fleet writes into a script, a manifest or a task file.

Issue #23: a value that reaches fleet.sbatch, submit.sh or job.yaml is checked here, and
refused with one ConfigError naming the option, the value and the grammar. What is allowed:

- Slurm names (--partition, --account, a QOS, each node): `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
- Node lists (--nodelist): names separated by ',', each with at most one bracket range of
  Slurm's hostlist syntax, `gpu[01-04,07]`, expanded to gpu01..gpu04 and gpu07.
- Images (--image): the Docker reference grammar (distribution/reference):
  `[host[:port]/]component[/component...][:tag][@algorithm:hex]`, lower-case components.
- Suite names (a suite's `name:`): `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`; they name directories.
- Paths (--out, --host-path, --mount-path, --harness): no control character (C0, DEL, C1),
  no line or paragraph separator, no bidi control, no lone surrogate; where sbatch reads the
  path (Slurm), no backslash either: sbatch takes it as an escape, and a backslash in --output
  turns off its %A_%a patterns.
- One more sbatch option (--sbatch): `--NAME` or `--NAME=VALUE`, NAME `[a-z][a-z0-9-]*`, VALUE
  printable ASCII without space, quote, backslash or '#', and never an option the script sets
  itself (or an abbreviation of one, which sbatch's getopt would take for it).

What passes is still quoted where it is written: shlex.quote in shell lines, sbatch_quote in
`#SBATCH` lines.
"""

from __future__ import annotations

import re
import shlex

from harness.errors import ConfigError

NAME_RULE = "[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_NAME = re.compile(NAME_RULE, re.ASCII)
NAME_WORDS = "a letter or digit, then at most 63 letters, digits, '.', '_' or '-'"
MAX_NODES = 4096  # one array per node: more is a typo
# Control characters (C0, DEL, C1), line and paragraph separators, bidi controls, surrogates
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_HOSTLIST = re.compile(r"([A-Za-z0-9._-]*)\[([0-9,-]+)\]([A-Za-z0-9._-]*)", re.ASCII)
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?", re.ASCII)

# distribution/reference's regexp.go, written out
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART = r"(?:[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9-]*[A-Za-z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[A-Fa-f0-9:]+\])(?::[0-9]+)?"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}"
_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*)(?::{_TAG})?(?:@{_DIGEST})?",
    re.ASCII,
)
IMAGE_RULE = "[host[:port]/]name[/name...][:tag][@sha256:hex], names in lower case"
MAX_IMAGE_NAME = 255

# VALUE: printable ASCII but space, '"', '#', "'" and '\\' (sbatch's quotes, comment, escape)
_SBATCH = re.compile(r"--([a-z][a-z0-9-]*)(?:=([!$%&(-\[\]-~]+))?", re.ASCII)
# What fleet.sbatch and submit.sh set themselves: --sbatch may not set them again.
RESERVED_SBATCH = (
    "account",
    "array",
    "error",
    "exclusive",
    "gpus-per-node",
    "job-name",
    "nodelist",
    "nodes",
    "ntasks",
    "open-mode",
    "output",
    "parsable",
    "partition",
    "time",
    "wrap",
)
# sbatch options that begin a reserved one's name: getopt takes an exact name as itself
NOT_ABBREVIATIONS = ("gpus",)
_SBATCH_SAFE = re.compile(r"[A-Za-z0-9@%+=:,./_-]+", re.ASCII)


def check_name(option: str, value: str, what: str = "a Slurm name") -> str:
    """`value` if it is a Slurm name (partition, account, QOS, node); else a ConfigError."""
    if not _NAME.fullmatch(value):
        raise ConfigError(f"{option}: {value!r} is not {what} ({NAME_RULE}: {NAME_WORDS})")
    return value


def check_suite_name(where: str, value: str) -> str:
    """A suite's `name:`, which names the fleet's directory and its Slurm jobs."""
    return check_name(f"{where}: name", value, "a suite name")


def expand_nodelist(option: str, text: str) -> list[str]:
    """The nodes a node list names: `a,b`, `gpu[01-03,07]`, each a Slurm name."""
    nodes: list[str] = []
    for item in _split_top(option, text):
        found = _HOSTLIST.fullmatch(item)
        names = [item] if found is None and "[" not in item else _expand(option, item, found)
        nodes += [check_name(option, name, "a node name") for name in names]
        if len(nodes) > MAX_NODES:
            raise ConfigError(f"{option}: more than {MAX_NODES} nodes; is {text!r} right?")
    if not nodes:
        raise ConfigError(f"{option}: {text!r} names no node; give a,b,c or gpu[01-04]")
    return nodes


def _split_top(option: str, text: str) -> list[str]:
    """`text` split at the commas outside brackets; empty items dropped."""
    items, depth, current = [], 0, ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if depth not in (0, 1):
            raise ConfigError(f"{option}: {text!r} has unbalanced brackets; give gpu[01-04]")
        if char == "," and depth == 0:
            items.append(current.strip())
            current = ""
        else:
            current += char
    if depth != 0:
        raise ConfigError(f"{option}: {text!r} has unbalanced brackets; give gpu[01-04]")
    return [item for item in [*items, current.strip()] if item]


def _expand(option: str, item: str, found: re.Match[str] | None) -> list[str]:
    if found is None:
        raise ConfigError(
            f"{option}: {item!r} is not a node name or a range like gpu[01-04,07] "
            f"(names: {NAME_RULE})"
        )
    prefix, ranges, suffix = found.groups()
    names = []
    for part in ranges.split(","):
        bounds = _RANGE.fullmatch(part)
        first, last = (bounds[1], bounds[2] or bounds[1]) if bounds else ("1", "0")
        if int(last) < int(first) or int(last) - int(first) >= MAX_NODES:
            raise ConfigError(f"{option}: {item!r}: {part!r} is not a range like 01-04")
        width = len(first)
        names += [f"{prefix}{n:0{width}d}{suffix}" for n in range(int(first), int(last) + 1)]
        if len(names) > MAX_NODES:
            raise ConfigError(f"{option}: {item!r} names more than {MAX_NODES} nodes")
    return names


def check_image(option: str, value: str) -> str:
    """`value` if it is a Docker image reference (or an image ID); else a ConfigError.

    As Docker reads one, a first component is a registry only if it has a '.' or a ':' or is
    `localhost`; otherwise it is part of the (lower-case) repository name.
    """
    found = _REFERENCE.fullmatch(value)
    first = found["name"].split("/")[0] if found and "/" in found["name"] else ""
    domain = any(c in first for c in ".:[") or first == "localhost"
    if (
        found is None
        or len(found["name"]) > MAX_IMAGE_NAME
        or (first.lower() != first and not domain)
    ):
        raise ConfigError(
            f"{option}: {value!r} is not an image reference like repo/name:tag "
            f"(Docker's grammar: {IMAGE_RULE})"
        )
    return value


def check_text(option: str, value: str) -> str:
    """`value` if it holds no control, separator or bidi character; else a ConfigError."""
    bad = _UNSAFE.search(value)
    if bad is not None:
        raise ConfigError(
            f"{option}: {value!r} holds the control character {bad.group()!r} at "
            f"{bad.start()}; no control character, line break or bidi mark may pass"
        )
    return value


def escaped(value: str) -> str:
    r"""`value` with each character check_text refuses written as its escape (`\x1b`).

    For free text a record carries (an entry's error message), shown on one line.
    """
    return _UNSAFE.sub(
        lambda m: m.group().encode("unicode_escape", "backslashreplace").decode(), value
    )


def check_path(option: str, value: str, *, sbatch: bool = False) -> str:
    """A path that is written into a script: no control character; for sbatch, no backslash."""
    check_text(option, value)
    if sbatch and "\\" in value:
        raise ConfigError(
            f"{option}: {value!r} holds a backslash, which sbatch reads as an escape (and "
            "which turns off its %A_%a log names); pick a path without one"
        )
    return value


def check_sbatch_option(option: str) -> str:
    """One more sbatch option, as --sbatch gives it: `--NAME[=VALUE]`, not one we set."""
    found = _SBATCH.fullmatch(option)
    if found is None:
        raise ConfigError(
            f"--sbatch: {option!r} is not one sbatch option like --qos=high "
            "(--NAME[=VALUE]: NAME in lower case, VALUE printable with no space, quote, "
            "backslash or '#')"
        )
    name, value = found.groups()
    taken = [r for r in RESERVED_SBATCH if r == name or r.startswith(name)]
    taken = [] if name in NOT_ABBREVIATIONS else taken
    if taken:
        raise ConfigError(
            f"--sbatch: {option!r} would set --{taken[0]}, which the fleet's script sets "
            "itself; use harness's own option for it, or leave it out"
        )
    if name == "qos" and value is not None:
        check_name("--sbatch --qos", value, "a QOS name")
    return option


def check_harness(text: str) -> list[str]:
    """--harness: the command nodes run harness with, split as a shell would split it."""
    check_path("--harness", text, sbatch=True)
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ConfigError(f"--harness: {text!r} cannot be split into words ({exc})") from None
    if not words:
        raise ConfigError("--harness: empty; give the command, e.g. /opt/bt/bin/harness")
    return words


def sbatch_quote(value: str) -> str:
    r"""`value` as one word of an `#SBATCH` line: bare when safe, else in double quotes.

    sbatch splits a directive line itself (src/sbatch/opt.c, get_argument): '"' and "'" quote,
    '\' escapes, an unquoted '#' starts a comment. Double quotes with '"' escaped read the same
    in every version; a backslash never reaches here (check_path).
    """
    if _SBATCH_SAFE.fullmatch(value):
        return value
    return '"' + value.replace('"', '\\"') + '"'


def log_pattern(directory: str) -> str:
    """An --output file pattern in `directory`, its own '%' kept literal ('%%')."""
    return directory.replace("%", "%%") + "/%A_%a.out"
