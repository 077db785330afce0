"""Gauge families whose sample lines a collector keeps rendered, so a scrape of thousands of
per-object series costs a string join instead of formatting every sample again.

Why: ``prometheus_client`` formats each sample on every scrape, so a scrape of a large pool's
per-machine series costs time in proportion to all of them (``docs/performance.md``), while nearly
none of them changed since the last scrape. A collector that knows when an object changed (the
informer hands out a new object for each version) can keep each object's lines and re-render only
the changed ones.

A ``PrerenderedGauge`` is an ordinary ``GaugeMetricFamily`` to everything that reads samples
(``registry.get_sample_value``, ``collect()``): its ``samples`` are built on demand. Only
``exposition`` (what ``/metrics`` serves) uses the kept lines; the bytes are the same as
``prometheus_client``'s for both the text format and OpenMetrics (a test compares them)::

    family = PrerenderedGauge("mcm_machine_info", "Information of the machine", ["name"])
    labels = {"name": "m-1"}
    family.chunks.append(sample_line(family.name, labels, 1))  # kept per object
    family.values.append([(labels, 1)])
    body = exposition(registry, encoder)  # encoder from prometheus_client's choose_encoder
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

Encoder = Callable[[Collector], bytes]
_EOF = b"# EOF\n"  # OpenMetrics' last line; the text format has none
_go_float: Callable[[float], str] = floatToGoString  # how both formats write a value


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def sample_line(name: str, labels: Mapping[str, str], value: float) -> str:
    """One gauge sample as both formats write it: labels sorted, values escaped."""
    if not labels:
        return f"{name} {_go_float(value)}\n"
    pairs = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
    return f"{name}{{{pairs}}} {_go_float(value)}\n"


class PrerenderedGauge(GaugeMetricFamily):
    """A gauge family given as rendered text (lines from ``sample_line``), in chunks a
    collector keeps per object, plus, for readers of samples, the (labels, value) pairs each
    chunk came from."""

    def __init__(self, name: str, documentation: str, labels: Sequence[str]) -> None:
        super().__init__(name, documentation, labels=list(labels))
        self.chunks: list[str] = []
        self.values: list[Sequence[tuple[dict[str, str], float]]] = []

    @property
    def samples(self) -> list[Sample]:
        return [
            Sample(self.name, labels, value) for chunk in self.values for labels, value in chunk
        ]

    @samples.setter
    def samples(self, _: list[Sample]) -> None:
        """Metric.__init__ sets an empty list; the samples come from ``values``."""


class _Families(Collector):
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)


def exposition(registry: Collector, encoder: Encoder) -> bytes:
    """``encoder(registry)``, with each ``PrerenderedGauge``'s kept lines in place of its
    formatted samples. Families keep their order; the header lines come from ``encoder``."""
    families = list(registry.collect())
    if not any(isinstance(f, PrerenderedGauge) for f in families):
        return encoder(_Families(families))
    chunks: list[bytes] = []
    batch: list[Metric] = []
    openmetrics = False

    def encode(items: list[Metric]) -> bytes:
        nonlocal openmetrics
        body = encoder(_Families(items))
        if body.endswith(_EOF):
            openmetrics = True
            body = body[: -len(_EOF)]
        return body

    for family in families:
        if isinstance(family, PrerenderedGauge):
            if batch:
                chunks.append(encode(batch))
                batch = []
            header = GaugeMetricFamily(family.name, family.documentation, labels=[])
            chunks.append(encode([header]))
            chunks.append("".join(family.chunks).encode())
        else:
            batch.append(family)
    if batch:
        chunks.append(encode(batch))
    if openmetrics:
        chunks.append(_EOF)
    return b"".join(chunks)
