"""Keyword options onto the library's CUSCOPE_* settings.

Every option is the C++ ``cuscope::Options`` field of the same name and is validated by the
library's own parser (the one that reads CUSCOPE_* variables): Python only turns each value into
the text a variable would hold. Nothing here decides whether a value is good.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, Mapping, Tuple

# keyword -> (CUSCOPE_* variable, what the value may be)
OPTIONS: Dict[str, Tuple[str, str]] = {
    "enabled": ("CUSCOPE_ENABLE", "bool"),
    "gpu_events": ("CUSCOPE_GPU_EVENTS", "bool"),
    "events": ("CUSCOPE_EVENTS", "text"),  # "auto", "always", "sampled:N" or "off"
    "event_timestamps": ("CUSCOPE_EVENT_TIMESTAMPS", "text"),  # "cuda" or "cupti"
    "activities": ("CUSCOPE_ACTIVITIES", "bool"),
    "graphs": ("CUSCOPE_GRAPHS", "bool"),
    "attribution": ("CUSCOPE_ATTRIBUTION", "text"),  # "external" or "launch"
    "sync_records": ("CUSCOPE_SYNC_RECORDS", "bool"),
    "memory_records": ("CUSCOPE_MEMORY_RECORDS", "bool"),
    "wait_steps": ("CUSCOPE_WAIT", "int"),
    "wait_ms": ("CUSCOPE_WAIT_MS", "int"),
    "warmup_steps": ("CUSCOPE_WARMUP", "int"),
    "active_steps": ("CUSCOPE_ACTIVE", "int"),
    "repeat": ("CUSCOPE_REPEAT", "int"),
    "detach": ("CUSCOPE_DETACH", "bool"),
    "detach_between": ("CUSCOPE_DETACH_BETWEEN", "bool"),
    "step_ms": ("CUSCOPE_STEP_MS", "int"),
    "whole_ms": ("CUSCOPE_WHOLE_MS", "int"),
    "sample_ms": ("CUSCOPE_SAMPLE_MS", "int"),
    "print_at_exit": ("CUSCOPE_PRINT", "bool"),
    "output_path": ("CUSCOPE_OUTPUT", "path"),
    "json_path": ("CUSCOPE_JSON", "path"),
    "report_every_s": ("CUSCOPE_REPORT_EVERY", "int"),
    "sort": ("CUSCOPE_SORT", "text"),
    "max_rows": ("CUSCOPE_ROWS", "int"),
    "top_kernels": ("CUSCOPE_TOP_KERNELS", "int"),
    "max_findings": ("CUSCOPE_FINDINGS", "int"),
    "max_depth": ("CUSCOPE_MAX_DEPTH", "int"),
    "metrics": ("CUSCOPE_METRICS", "list"),
    "metric_ranges": ("CUSCOPE_METRIC_RANGES", "list"),
    "metric_steps": ("CUSCOPE_METRIC_STEPS", "int"),
    "trace_path": ("CUSCOPE_TRACE", "path"),
    "trace_limit_mb": ("CUSCOPE_TRACE_LIMIT", "int"),
    "nvtx_domains": ("CUSCOPE_NVTX_DOMAINS", "list"),
}

TABLE_OPTIONS = ("sort", "max_rows", "top_kernels", "max_findings")


def _text(keyword: str, kind: str, value: Any) -> str:
    if kind == "bool" and isinstance(value, bool):
        return "1" if value else "0"
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if kind == "path" and isinstance(value, (str, os.PathLike)):
        return os.fspath(value)
    if kind == "list" and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return ",".join(value)
    if isinstance(value, str):  # the text a CUSCOPE_* variable would hold: the library judges it
        return value
    wanted = {"bool": "a bool", "int": "a whole number", "path": "a path",
              "list": "a string or a list of strings", "text": "a string"}[kind]
    raise ValueError(f"cuscope option {keyword}={value!r}: {OPTIONS[keyword][0]} takes {wanted}")


def _bytes(keyword: str, value: Any, text: str) -> bytes:
    """The bytes a CUSCOPE_* variable would hold for ``text``: os.fsencode's, so that a path that is
    not UTF-8 (lone surrogates, as os.listdir and sys.argv give it) is its own bytes again."""
    variable = OPTIONS[keyword][0]
    try:
        data = os.fsencode(text)
    except UnicodeEncodeError:
        raise ValueError(f"cuscope option {keyword}={value!r}: {variable} cannot hold a lone surrogate that "
                         f"escapes no byte") from None
    if b"\0" in data:  # the library reads the value as a C string: it would end there
        raise ValueError(f"cuscope option {keyword}={value!r}: {variable} cannot hold a NUL character")
    return data


def settings(options: Mapping[str, Any], allowed: Iterable[str] = OPTIONS) -> Dict[str, bytes]:
    """``{keyword: value}`` as ``{CUSCOPE_* variable: bytes}``; TypeError for an unknown keyword."""
    allowed = tuple(allowed)
    out: Dict[str, bytes] = {}
    for keyword, value in options.items():
        if keyword not in allowed:
            raise TypeError(f"unknown cuscope option {keyword!r}; the options are: {', '.join(allowed)}")
        variable, kind = OPTIONS[keyword]
        out[variable] = _bytes(keyword, value, _text(keyword, kind, value))
    return out


def raise_problems(problems, given: Mapping[str, Any]) -> None:
    """ValueError naming the first bad option, in the library's words, when there is one."""
    if not problems:
        return
    by_variable = {OPTIONS[k][0]: k for k in given}
    variable, message = problems[0]
    keyword = by_variable.get(variable, variable)
    message = message.split("; keeping ")[0]  # nothing is kept: the call fails
    raise ValueError(f"cuscope option {keyword}={given.get(keyword)!r}: {message}")
