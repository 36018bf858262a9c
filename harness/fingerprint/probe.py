"""Reading small text files under an injectable filesystem root, noting what could not be read."""

from __future__ import annotations

from pathlib import Path

from harness.records.fingerprint import Missing


class Probe:
    """Reads files under `root` (standing in for `/`) and collects the fields it could not read."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.missing: list[Missing] = []

    @property
    def is_live(self) -> bool:
        """Whether `root` is this machine's real `/`, so process-level calls describe it too."""
        return self.root.resolve() == Path("/").resolve()

    def path(self, rel: str) -> Path:
        """The path of `rel` (written as under `/`) inside the root."""
        return self.root / rel.lstrip("/")

    def exists(self, rel: str) -> bool:
        """Whether `rel` exists under the root."""
        return self.path(rel).exists()

    def note(self, field: str, reason: str) -> None:
        """Record that `field` could not be read."""
        self.missing.append(Missing(field=field, reason=reason))

    def optional(self, rel: str) -> str | None:
        """The stripped text of `rel`, or None if it cannot be read (nothing recorded)."""
        try:
            return self.path(rel).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None

    def text(self, rel: str, field: str, hint: str = "") -> str | None:
        """The stripped text of `rel`, or None after recording why `field` is missing."""
        try:
            return self.path(rel).read_text(encoding="utf-8", errors="replace").strip()
        except OSError as exc:
            self.note(field, unreadable_reason(rel, exc, hint))
            return None

    def cpulist(self, rel: str, field: str, hint: str = "") -> list[int] | None:
        """The CPUs listed in the cpulist file `rel`, or None after recording why not."""
        text = self.text(rel, field, hint)
        if text is None:
            return None
        try:
            return parse_cpulist(text)
        except ValueError:
            self.note(field, f"/{rel.lstrip('/')}: not a cpulist: {text[:40]!r}")
            return None

    def integer(self, rel: str, field: str, hint: str = "") -> int | None:
        """The integer in the file `rel`, or None after recording why not."""
        text = self.text(rel, field, hint)
        if text is None:
            return None
        try:
            return int(text)
        except ValueError:
            self.note(field, f"/{rel.lstrip('/')}: not an integer: {text[:40]!r}")
            return None

    def relative(self, path: Path) -> str:
        """`path` (found under the root) written relative to the root."""
        return path.relative_to(self.root).as_posix()


def unreadable_reason(rel: str, exc: OSError, hint: str = "") -> str:
    """One line saying why the file `rel` could not be read."""
    shown = "/" + rel.lstrip("/")
    if isinstance(exc, FileNotFoundError):
        reason = f"{shown} not present"
    elif isinstance(exc, PermissionError):
        reason = f"{shown}: permission denied (needs root)"
    else:
        reason = f"{shown}: {exc.strerror or exc}"
    return f"{reason}: {hint}" if hint else reason


def parse_cpulist(text: str) -> list[int]:
    """CPU numbers of a kernel cpulist such as "0-3,8,10-11" (empty text: no CPUs)."""
    cpus: list[int] = []
    for part in text.replace("\n", ",").split(","):
        part = part.strip()
        if not part:
            continue
        first, _, last = part.partition("-")
        cpus.extend(range(int(first), int(last or first) + 1))
    return cpus


def format_cpulist(cpus: list[int]) -> str:
    """The canonical cpulist of CPU numbers, such as "0-3,8" (no CPUs: "")."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and runs[-1][1] == cpu - 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def size_kib(text: str) -> int:
    """KiB in a sysfs size such as "32K", "2M" or "1G" (a bare number is bytes)."""
    scale = {"K": 1, "M": 1024, "G": 1024 * 1024}
    unit = text[-1:].upper()
    if unit in scale:
        return int(text[:-1]) * scale[unit]
    return int(text) // 1024
