"""Render a dashboard as a PNG from real Prometheus data, so a reader sees it without Grafana.

    python config/dashboards/render.py --demo                      # machines dashboard
    python config/dashboards/render.py --demo --dashboard framework --out /tmp/framework.png
    python config/dashboards/render.py --prometheus http://127.0.0.1:9090 --minutes 30

``--demo`` starts ``kubetrio run --embedded`` and a Prometheus (the ``prometheus`` binary on
PATH; Debian package ``prometheus``) scraping it every second with config/prometheus/rules.yaml,
waits until the demo has finished its work, and plots each panel's queries — the same PromQL
the dashboard JSON holds, variables set to "All" — over the run with matplotlib (the ``viz``
extra: ``pip install -e '.[viz]'``).

The helpers here (free ports, the Prometheus config, the HTTP API) are shared with
``tests/packaging/test_prometheus.py``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RULES = ROOT / "config" / "prometheus" / "rules.yaml"
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

# The demo's target label: the namespace the demo's Machines live in, as in a deployment
# where the manager runs beside its Machines (see scrape.yaml).
DEMO_NAMESPACE = "default"
# Scrape twice a second: the demo creates its first machines a second after the manager
# starts serving /metrics, and events before a series' first sample never show in a rate.
SCRAPE_INTERVAL = "500ms"
EVALUATION_INTERVAL = "1s"
# Grafana's $__rate_interval at a 1s step: four scrape intervals.
RATE_INTERVAL = "2s"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def prometheus_config(metrics_port: int, rules: Path = RULES) -> str:
    """A Prometheus config scraping kubetrio on ``metrics_port`` as scrape.yaml would."""
    return json.dumps(
        {
            "global": {
                "scrape_interval": SCRAPE_INTERVAL,
                "scrape_timeout": SCRAPE_INTERVAL,
                "evaluation_interval": EVALUATION_INTERVAL,
            },
            "rule_files": [str(rules)],
            "scrape_configs": [
                {
                    "job_name": "kubetrio",
                    "honor_labels": True,
                    "static_configs": [
                        {
                            "targets": [f"127.0.0.1:{metrics_port}"],
                            "labels": {"namespace": DEMO_NAMESPACE},
                        }
                    ],
                }
            ],
        }
    )  # JSON is YAML


def prometheus_command(binary: str, config: Path, data: Path, port: int) -> list[str]:
    return [
        binary,
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--storage.tsdb.retention.time=1d",
        "--log.level=warn",
    ]


class PrometheusAPI:
    """The few HTTP API calls the test and the renderer make (blocking)."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def get(self, path: str, **params: Any) -> Any:
        query = urllib.parse.urlencode(params, doseq=True)
        url = f"{self.url}{path}?{query}" if query else f"{self.url}{path}"
        try:
            with urllib.request.urlopen(url, timeout=self.timeout) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as error:
            body = json.loads(error.read() or b"{}")
            if not body:
                raise
        if body.get("status") != "success":
            raise PromQLError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body["data"]

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=self.timeout) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[Any]:
        data = self.get("/api/v1/query_range", query=expr, start=start, end=end, step=step)
        result: list[Any] = data["result"]
        return result

    def query(self, expr: str, at: float | None = None) -> list[Any]:
        params: dict[str, Any] = {"query": expr}
        if at is not None:
            params["time"] = at
        result: list[Any] = self.get("/api/v1/query", **params)["result"]
        return result

    def label_values(self, label: str, match: str, start: float, end: float) -> list[str]:
        values: list[str] = self.get(
            f"/api/v1/label/{label}/values", **{"match[]": match, "start": start, "end": end}
        )
        return values


class PromQLError(Exception):
    pass


def scraping(api: PrometheusAPI) -> bool:
    """Whether Prometheus is up and scraping the kubetrio job (``up`` has a sample, 0 while
    kubetrio is not listening yet): it starts some seconds after it reports ready."""
    return api.ready() and bool(api.query('up{job="kubetrio"}'))


def events_before_first_sample(api: PrometheusAPI, metric: str, start: float, end: float) -> bool:
    """Whether counter ``metric`` counted everything it ever will before Prometheus first saw
    it: some series starts above 0 and none grows afterwards. Then no rate or increase can
    show those events (Prometheus cannot know when they happened)."""
    series = api.query_range(metric, start, end, 0.5)
    firsts = [float(s["values"][0][1]) for s in series if s["values"]]
    grew = any(float(s["values"][-1][1]) > float(s["values"][0][1]) for s in series)
    return any(first > 0 for first in firsts) and not grew


def finite_points(result: list[Any]) -> int:
    """Samples that are numbers (histogram_quantile over an idle window gives NaN)."""
    count = 0
    for series in result:
        for _, value in series.get("values") or [series.get("value")]:
            if not math.isnan(float(value)):
                count += 1
    return count


# --- the demo ------------------------------------------------------------------------------


def demo_args() -> list[str]:
    """Options that make ``kubetrio run --embedded`` run its demo to the end and stay up, where
    this build has them (``kubetrio run --help``)."""
    help_text = subprocess.run(
        [sys.executable, "-m", "kubetrio.cmd.main", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return ["--keep-running"] if "--keep-running" in help_text else []


def kubetrio_command(workdir: Path, metrics_port: int, probe_port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "kubetrio.cmd.main",
        "run",
        "--embedded",
        "--embedded-dir",
        str(workdir / "embedded"),
        "--metrics-bind-address",
        f"127.0.0.1:{metrics_port}",
        "--health-probe-bind-address",
        f"127.0.0.1:{probe_port}",
        "--leader-elect",
        *demo_args(),
    ]


def run_demo(workdir: Path, settle: str, timeout: float) -> tuple[PrometheusAPI, float, list[Any]]:
    """Start the demo and Prometheus; return once ``settle`` (a PromQL expression) has a
    sample, or ``timeout`` passed. The processes are the caller's to stop (returned)."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise SystemExit("prometheus not found (Debian: apt-get install prometheus)")
    metrics_port, probe_port, prom_port = free_port(), free_port(), free_port()
    config = workdir / "prometheus.yml"
    config.write_text(prometheus_config(metrics_port))
    log = (workdir / "processes.log").open("wb")
    # Prometheus first, so the demo's first machines are created after the first scrape (an
    # event before a series' first sample never shows in a rate).
    processes = [
        subprocess.Popen(
            prometheus_command(binary, config, workdir / "tsdb", prom_port),
            stdout=log,
            stderr=log,
        )
    ]
    api = PrometheusAPI(f"http://127.0.0.1:{prom_port}")
    deadline = time.time() + timeout
    while not scraping(api) and time.time() < deadline:
        time.sleep(0.5)
    start = time.time()
    kubetrio = kubetrio_command(workdir, metrics_port, probe_port)
    processes.append(subprocess.Popen(kubetrio, stdout=log, stderr=log))
    while time.time() < deadline:
        if api.query(settle):
            break
        time.sleep(1)
    else:
        print(f"warning: {settle} still empty after {timeout:g}s", file=sys.stderr)
    return api, start, processes


def stop(processes: list[Any]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


# --- plotting ------------------------------------------------------------------------------


def legend(series: dict[str, str], template: str) -> str:
    if template in ("", "__auto"):
        return ",".join(f"{k}={v}" for k, v in series.items() if k != "__name__") or "value"
    out = template
    for key, value in series.items():
        out = out.replace("{{" + key + "}}", value)
    return out


def render(api: PrometheusAPI, name: str, start: float, end: float, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    board = generate.load(name)
    values = generate.all_values(name)
    panels = [panel for panel in generate.panels(board) if panel["type"] != "table"]
    columns = 3
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(15, 2.6 * rows), squeeze=False)
    figure.suptitle(f"{board['title']} — kubetrio run --embedded, real Prometheus", fontsize=13)
    step = max(1.0, (end - start) / 300)
    for ax, panel in zip(axes.flat, panels, strict=False):
        ax.set_title(panel["title"], fontsize=9, loc="left")
        unit = panel["fieldConfig"]["defaults"].get("unit", "short")
        plotted = 0
        for tgt in panel["targets"]:
            expr = generate.expand(tgt["expr"], values, RATE_INTERVAL)
            for series in api.query_range(expr, start, end, step):
                xs = [float(t) - start for t, _ in series["values"]]
                ys = [float(v) for _, v in series["values"]]
                if all(math.isnan(y) for y in ys):
                    continue  # what Grafana shows as no data (e.g. a quantile of nothing)
                ax.plot(xs, ys, linewidth=1.2, label=legend(series["metric"], tgt["legendFormat"]))
                plotted += 1
        if plotted:
            ax.legend(fontsize=6, loc="upper left", ncol=2, frameon=False)
        else:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes)
        ax.tick_params(labelsize=7)
        ax.set_xlabel("seconds into the demo", fontsize=7)
        if unit not in ("short", "none"):
            ax.set_ylabel(unit, fontsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    figure.tight_layout()
    figure.savefig(out, dpi=80)
    plt.close(figure)


# The demo's deployment replaced its failed machine, was scaled down from its peak, and has
# exactly its desired machines, all available: the demo has done its work.
DEMO_DONE = (
    "sum(mcm_machine_stale_machines_total) > 0"
    " and on () sum(mcm_machine_deployment_info_spec_replicas)"
    " < max_over_time(sum(mcm_machine_deployment_info_spec_replicas)[10m:1s])"
    " and on () sum(mcm_machine_deployment_status_available_replicas)"
    " == sum(mcm_machine_deployment_info_spec_replicas)"
    " and on () sum(mcm_machine_items_total) == sum(mcm_machine_deployment_info_spec_replicas)"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dashboard", default="machines", choices=generate.NAMES)
    parser.add_argument("--out", type=Path, default=None, help="PNG (default: beside the JSON)")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--demo", action="store_true", help="run the embedded demo and Prometheus")
    source.add_argument("--prometheus", help="URL of a Prometheus that scrapes kubetrio")
    parser.add_argument("--minutes", type=float, default=15, help="range, with --prometheus")
    parser.add_argument(
        "--settle",
        default=DEMO_DONE,
        help="with --demo: plot once this PromQL has a sample (default: the demo's last step, "
        "the scale-down after the failed machine was replaced, is done)",
    )
    parser.add_argument("--timeout", type=float, default=120, help="with --demo: longest wait")
    args = parser.parse_args()
    out = args.out or HERE / f"{args.dashboard}.png"
    if args.prometheus:
        end = time.time()
        render(PrometheusAPI(args.prometheus), args.dashboard, end - args.minutes * 60, end, out)
    else:
        with tempfile.TemporaryDirectory(prefix="kubetrio-render-") as workdir:
            api, start, processes = run_demo(Path(workdir), args.settle, args.timeout)
            try:
                time.sleep(3)  # the last scrapes and rule evaluations
                render(api, args.dashboard, start, time.time(), out)
            finally:
                stop(processes)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
