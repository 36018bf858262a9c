"""The system description JSON: what the fingerprint knows, the rest from the user's YAML."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from harness.errors import ConfigError
from harness.records.fingerprint import Fingerprint
from harness.records.result import RunResult

# MLPerf v6.1's required fields (the checker's SYSTEM_DESC_REQUIRED_FIELDS), in its order.
SYSTEM_FIELDS = (
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
)
# Fields the checker requires to be non-empty (SYSTEM_DESC_MEANINGFUL_RESPONSE_REQUIRED_FIELDS).
MEANINGFUL = frozenset(
    {
        "division",
        "submitter",
        "system_type",
        "status",
        "system_name",
        "number_of_nodes",
        "host_processor_model_name",
        "host_processors_per_node",
        "host_processor_core_count",
        "host_memory_capacity",
        "host_memory_configuration",
        "host_storage_capacity",
        "host_storage_type",
        "host_networking",
        "host_network_card_count",
        "host_networking_topology",
        "accelerators_per_node",
        "accelerator_model_name",
        "accelerator_memory_capacity",
        "accelerator_host_interconnect",
        "accelerator_memory_configuration",
        "accelerator_interconnect",
        "cooling",
        "framework",
        "operating_system",
        "other_software_stack",
    }
)
# Set from the command line: the checker requires them to equal the tree's directory names.
FROM_COMMAND_LINE = ("division", "submitter")
DESCRIBABLE = tuple(f for f in SYSTEM_FIELDS if f not in FROM_COMMAND_LINE)
STATUSES = ("available", "preview", "rdi")
SYSTEM_TYPES = ("edge", "datacenter", "datacenter,edge", "edge,datacenter")
# The checker reads these as integers (int(...)); as strings, "0" is still a meaningful value.
INTEGER_FIELDS = ("number_of_nodes", "accelerators_per_node")
UNKNOWN = "unknown"
NOT_APPLICABLE = "N/A"
# What neither the fingerprint nor a silent user can say: "rdi" (research, development or
# internal) claims no availability; the checker's "meaningful" fields get "unknown".
DEFAULTS: Mapping[str, str] = {"status": "rdi", "system_type": "edge", "hw_notes": ""}
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")  # --org and --system name directories


def load_description(path: Path) -> dict[str, str]:
    """A system description YAML: a flat mapping of system JSON fields to text or numbers.

    Raises:
        ConfigError: naming the file and key, for a missing file, invalid YAML, a repeated or
            unknown key, a value that is not text or a number, or an invalid status, system
            type or count.
    """
    data = _read_yaml(path)
    out: dict[str, str] = {}
    for key, value in data.items():
        if key in FROM_COMMAND_LINE:
            option = "--division" if key == "division" else "--org"
            raise ConfigError(f"{path}: {key}: set by {option} (it names the tree's directory)")
        if key not in DESCRIBABLE:
            raise ConfigError(
                f"{path}: unknown key '{key}' (allowed: {', '.join(sorted(DESCRIBABLE))})"
            )
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise ConfigError(
                f"{path}: {key}: expected text or a number, got {type(value).__name__}"
            )
        out[key] = str(value).strip()
        if not out[key] and key in MEANINGFUL:
            raise ConfigError(
                f"{path}: {key}: empty; MLPerf's checker needs a value (write unknown or N/A)"
            )
    check_description(out, str(path))
    return out


def check_description(fields: Mapping[str, str], where: str) -> None:
    """Refuse values the checker would reject: status, system type, integer counts."""
    status = fields.get("status")
    if status is not None and status.lower() not in STATUSES:
        raise ConfigError(
            f"{where}: status: {status!r} is not allowed (allowed: rdi, available, preview)"
        )
    kind = fields.get("system_type")
    if kind is not None and kind not in SYSTEM_TYPES:
        raise ConfigError(
            f"{where}: system_type: {kind!r} is not allowed (allowed: {', '.join(SYSTEM_TYPES)})"
        )
    for key in INTEGER_FIELDS:
        value = fields.get(key)
        if value is not None and not value.isdigit():
            raise ConfigError(f'{where}: {key}: must be a whole number such as "0", got {value!r}')


def system_json(
    results: Sequence[RunResult],
    *,
    division: str,
    submitter: str,
    system: str,
    described: Mapping[str, str],
    notes: Sequence[str] = (),
) -> dict[str, str]:
    """Every required field: from the command line, the user's description, the fingerprint.

    The user's description wins over what the fingerprint says (a VM may hide the CPU's
    exact model); ``notes`` are appended to ``sw_notes``. ``results`` share one machine.
    """
    known = {**DEFAULTS, **from_fingerprint(results, system)}
    data = {"division": division, "submitter": submitter}
    for key in DESCRIBABLE:
        data[key] = described.get(key, known.get(key, UNKNOWN))
    data["sw_notes"] = " ".join(part for part in (data["sw_notes"], *notes) if part)
    return data


def unknown_fields(data: Mapping[str, str]) -> list[str]:
    """The fields left "unknown": what a system description should add."""
    return [key for key in SYSTEM_FIELDS if data.get(key) == UNKNOWN]


def from_fingerprint(results: Sequence[RunResult], system: str) -> dict[str, str]:
    """The fields the results' fingerprint and software versions say."""
    first = results[0]
    fingerprint = first.fingerprint
    fields = {
        "system_name": system,
        "number_of_nodes": "1",  # one worker process on one machine runs LoadGen and the SUT
        **_cpu_fields(fingerprint),
        **_memory_fields(fingerprint),
        **_accelerator_fields(first, fingerprint),
        "framework": _joined(
            f"onnxruntime {r.versions.onnxruntime} ({', '.join(r.providers)}), "
            f"MLPerf LoadGen {r.versions.loadgen}"
            for r in results
        ),
        "operating_system": _operating_system(fingerprint),
        "other_software_stack": _joined(_software(r) for r in results),
        "sw_notes": "Measured with "
        + _joined(f"beyond-tops {r.versions.harness}" for r in results)
        + ".",
    }
    return {key: value for key, value in fields.items() if value}


def _cpu_fields(fingerprint: Fingerprint) -> dict[str, str]:
    cpu = fingerprint.section("cpu")
    sockets, cores = cpu.get("sockets"), cpu.get("cores")
    per_socket = cores // sockets if isinstance(cores, int) and isinstance(sockets, int) else None
    return {
        "host_processor_model_name": _text(cpu.get("model")),
        "host_processors_per_node": _text(sockets),
        "host_processor_core_count": _text(per_socket),
        "host_processor_frequency": _frequency(cpu),
        "host_processor_caches": ", ".join(
            f"{level} {_kib(size)}" for level, size in (cpu.get("cache_kib") or {}).items()
        ),
    }


def _memory_fields(fingerprint: Fingerprint) -> dict[str, str]:
    total = fingerprint.section("memory").get("total_bytes")
    return {"host_memory_capacity": _bytes(total) if isinstance(total, int) else ""}


def _accelerator_fields(result: RunResult, fingerprint: Fingerprint) -> dict[str, str]:
    if result.hardware.target == "cpu":  # the CPU ran the model: no accelerator applies
        fields = {key: NOT_APPLICABLE for key in SYSTEM_FIELDS if key.startswith("accelerator")}
        return {**fields, "accelerators_per_node": "0"}
    gpus = fingerprint.gpus
    if not gpus:  # the GPUs' details could not be read: their names, where the result has them
        names = result.hardware.gpus
        if not names:
            return {}
        return {"accelerators_per_node": str(len(names)), "accelerator_model_name": _joined(names)}
    first = gpus[0]
    memory = first.get("memory_total_mib")
    clock = first.get("clock_sm_max_mhz")
    gen, width = first.get("pcie_gen_max"), first.get("pcie_width_max")
    return {
        "accelerators_per_node": str(len(gpus)),
        "accelerator_model_name": _joined(_text(g.get("name")) for g in gpus),
        "accelerator_memory_capacity": f"{memory / 1024:.0f} GiB" if memory else "",
        "accelerator_frequency": f"{clock} MHz" if clock else "",
        "accelerator_host_interconnect": f"PCIe Gen{gen} x{width}" if gen and width else "",
    }


def _operating_system(fingerprint: Fingerprint) -> str:
    system = fingerprint.section("os")
    release, kernel = system.get("release"), system.get("kernel")
    return ", ".join(
        part for part in (_text(release), _text(kernel and f"kernel {kernel}")) if part
    )


def _software(result: RunResult) -> str:
    v = result.versions
    harness = result.fingerprint.section("harness")
    commit = harness.get("git_commit")
    parts = [
        f"Python {v.python}",
        f"numpy {v.numpy}",
        f"onnx {v.onnx}",
        f"beyond-tops {v.harness}" + (f" (git {str(commit)[:12]})" if commit else ""),
    ]
    gpus = result.fingerprint.gpus
    driver = gpus[0].get("driver_version") if gpus and result.hardware.target != "cpu" else None
    if driver:
        parts.append(f"GPU driver {driver}")
    if result.image is not None:
        parts.append(f"image {result.image.tag or result.image.id}")
    return ", ".join(parts)


def _frequency(cpu: Mapping[str, Any]) -> str:
    top, current = cpu.get("max_mhz"), cpu.get("current_mhz")
    if isinstance(top, (int, float)):
        return f"{top:.0f} MHz"
    if isinstance(current, (int, float)):
        return f"{current:.0f} MHz (the clock when measured; no maximum readable)"
    return ""


def _kib(size: object) -> str:
    if not isinstance(size, int):
        return UNKNOWN
    return f"{size // 1024} MiB" if size >= 1024 and size % 1024 == 0 else f"{size} KiB"


def _bytes(count: int) -> str:
    gib = count / 2**30
    return f"{gib:.1f} GiB" if gib < 100 else f"{gib:.0f} GiB"


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _joined(values: Any) -> str:
    """Distinct values in first-seen order, joined: results from one machine agree."""
    return "; ".join(dict.fromkeys(v for v in values if v))


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: no such file; start from scenarios/system-description.example.yaml"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read it as UTF-8 text ({exc})") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}:" if mark is not None else ""
        raise ConfigError(
            f"{path}:{where} {getattr(exc, 'problem', None) or 'invalid YAML'}"
        ) from None
    if data is None:  # every line commented out: nothing described
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of system JSON fields at the top level")
    _refuse_repeated_keys(node, path)
    return data


def _refuse_repeated_keys(node: yaml.Node | None, path: Path) -> None:
    """PyYAML keeps the last of a repeated key silently; a typo then hides a value."""
    seen: set[object] = set()
    for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else ():
        if key_node.value in seen:
            line = key_node.start_mark.line + 1
            raise ConfigError(
                f"{path}: line {line}: duplicate key '{key_node.value}'; give it once"
            )
        seen.add(key_node.value)


def check_name(value: str, option: str) -> str:
    """An --org or --system value, which names a directory of the tree."""
    if not NAME.match(value) or len(value) > 100:
        raise ConfigError(
            f"{option}: {value!r} names a directory of the submission tree; use letters, "
            "digits, '.', '_', '+' and '-' (starting with a letter or digit)"
        )
    return value
