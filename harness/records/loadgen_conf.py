"""LoadGen's conf format (mlperf.conf, user.conf): a key's value as LoadGen resolves it."""

from __future__ import annotations


def conf_value(text: str, model_key: str, scenario: str, key: str) -> str | None:
    """A key's value in mlperf.conf-format text, as LoadGen resolves it.

    The most specific line wins: ``model.Scenario`` over ``model.*`` over ``*.Scenario`` over
    ``*.*``; among equals, the last. None when no line sets it.
    """
    best: tuple[int, str] | None = None
    for line in text.splitlines():
        head, sep, value = line.partition("=")
        parts = head.strip().split(".")
        if not sep or line.lstrip().startswith("#") or len(parts) != 3 or parts[2] != key:
            continue
        model, scen = parts[0], parts[1]
        if model not in (model_key, "*") or scen not in (scenario, "*"):
            continue
        rank = (model == model_key) * 2 + (scen == scenario)
        if best is None or rank >= best[0]:
            best = (rank, value.strip())
    return None if best is None else best[1]
