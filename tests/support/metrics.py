"""Reading Prometheus text as a test would: one value per (name, labels)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def samples(text: str) -> Samples:
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(parsed: Samples, name: str, **labels: str) -> float | None:
    return parsed.get((name, frozenset(labels.items())))
