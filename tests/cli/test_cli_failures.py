"""``kubetrio run`` as a process fails with one line naming what to do, for every failure an
operator can meet before the manager runs; a bug keeps its traceback."""

from __future__ import annotations

import signal
import socket
import subprocess
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import yaml

from kubetrio.emulator import Emulator
from kubetrio.emulator.testclient import EmuClient
from tests.helpers.cli import environment, kubetrio
from tests.helpers.cli_failures import NO_PORTS, QUIET, run_to_exit, the_line
from tests.helpers.plugins import install_plugin
from tests.helpers.rbac import service_account, token

pytestmark = [pytest.mark.process, pytest.mark.slow]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port some other process listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.parametrize(
    ("flag", "other", "endpoints"),
    [
        ("--metrics-bind-address", "--health-probe-bind-address", "metrics"),
        ("--health-probe-bind-address", "--metrics-bind-address", "healthz, readyz"),
    ],
)
async def test_a_port_in_use_names_the_address_and_the_flag(
    emu: Emulator, taken_port: int, flag: str, other: str, endpoints: str
) -> None:
    argv = kubetrio(
        "run",
        "--kubeconfig",
        str(emu.kubeconfig_path),
        "--controllers",
        "example",
        flag,
        f"127.0.0.1:{taken_port}",
        other,
        "0",
        *QUIET,
    )
    code, stderr = await run_to_exit(argv)
    assert code == 1
    line = the_line(stderr)
    assert f"cannot listen on 127.0.0.1:{taken_port} for {endpoints}: " in line, line
    assert "Errno" not in line
    assert line.endswith(f"choose another address with {flag} ('0' turns it off)"), line


async def test_missing_crds_are_found_by_discovery_all_at_once(emu: Emulator) -> None:
    code, stderr = await run_to_exit(
        kubetrio(
            "run",
            "--kubeconfig",
            str(emu.kubeconfig_path),
            "--controllers",
            "machine",
            *NO_PORTS,
            *QUIET,
        )
    )
    assert code == 1
    line = the_line(stderr)
    assert line.startswith(
        "kubetrio: CRD not installed: machineclasses.machine.sapcloud.io, "
        "machines.machine.sapcloud.io, machinesets.machine.sapcloud.io (404 NotFound: "
    ), line
    assert "(GET /apis/machine.sapcloud.io/v1alpha1)" in line, line
    assert line.endswith("; install them with `kubetrio crds | kubectl apply -f -`"), line
    # Discovery answered it: no informer ever listed a kind that is not served.
    for plural in ("machines", "machinesets", "machineclasses"):
        assert emu.counters.get("list", plural) == 0


def refused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again: connecting is refused


async def test_an_api_server_that_refuses_connections() -> None:
    port = refused_port()
    code, stderr = await run_to_exit(
        kubetrio("run", "--master", f"http://127.0.0.1:{port}", *NO_PORTS, *QUIET)
    )
    assert code == 1
    assert the_line(stderr) == (
        f"kubetrio: no response from the API server at http://127.0.0.1:{port}: connection "
        "refused (GET /version); is the API server running, and is the kubeconfig's server "
        "(or --master) right?"
    )


async def test_an_api_server_that_never_answers() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog), never responds
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]
        argv = kubetrio("run", "--master", f"http://127.0.0.1:{port}", "--kube-api-timeout", "1s")
        code, stderr = await run_to_exit([*argv, *NO_PORTS, *QUIET])
    assert code == 1
    line = the_line(stderr)
    # Whichever gives up first, the request's own timeout or the limit around it, says so.
    assert "did not answer within 1s" in line or f"127.0.0.1:{port}: timed out" in line, line
    assert "reachable" in line, line


async def test_ctrl_c_while_the_api_server_does_not_answer_is_one_line() -> None:
    """Before the manager runs (its signal handling not yet installed), Ctrl-C while the
    start waits for a silent server was a KeyboardInterrupt traceback through trio."""
    listener = trio.socket.socket()
    with listener:
        await listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        argv = kubetrio("run", "--master", f"http://127.0.0.1:{port}", *NO_PORTS, *QUIET)
        with trio.fail_after(60):
            process = await trio.lowlevel.open_process(
                argv, stderr=subprocess.PIPE, env=environment()
            )
            try:
                connection, _ = await listener.accept()  # GET /version is under way
                with connection:
                    process.send_signal(signal.SIGINT)
                    assert process.stderr is not None
                    stderr = b"".join([chunk async for chunk in process.stderr])
                    await process.wait()
            finally:
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    assert process.returncode == 130
    assert the_line(stderr.decode()) == "kubetrio: interrupted"


def edited_kubeconfig(emu: Emulator, tmp_path: Path, edit: Callable[[Any], None]) -> Path:
    doc = yaml.safe_load(emu.kubeconfig_path.read_text())
    edit(doc)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def _server(host: str) -> Callable[[Any], None]:
    def edit(doc: Any) -> None:
        doc["clusters"][0]["cluster"]["server"] = f"https://{host}:6443"

    return edit


def _no_ca(doc: Any) -> None:
    del doc["clusters"][0]["cluster"]["certificate-authority-data"]


def _token(doc: Any) -> None:
    doc["users"][0]["user"]["token"] = "not-a-token-the-server-knows"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        pytest.param(
            _server("kubetrio-nowhere.invalid"),
            "at https://kubetrio-nowhere.invalid:6443: host name not found",
            id="dns",
        ),
        pytest.param(_no_ca, "its TLS certificate is not trusted", id="wrong-ca"),
        pytest.param(_token, "the API server rejected the credentials (401 Unauthorized", id="401"),
    ],
)
async def test_a_server_that_cannot_be_reached_or_trusted(
    emu: Emulator, tmp_path: Path, edit: Callable[[Any], None], expected: str
) -> None:
    path = edited_kubeconfig(emu, tmp_path, edit)
    code, stderr = await run_to_exit(
        kubetrio("run", "--kubeconfig", str(path), "--controllers", "example", *NO_PORTS, *QUIET)
    )
    assert code == 1
    line = the_line(stderr)
    assert expected in line, line
    assert "check " in line.rsplit(";", 1)[1], f"no advice: {line}"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


KUBECONFIG_CASES: list[Any] = [
    pytest.param(lambda d: d / "absent", "absent: No such file or directory", id="missing"),
    pytest.param(
        lambda d: _write(d / "broken", "clusters: [oops\n"), "broken: not valid YAML (", id="yaml"
    ),
]


@pytest.mark.parametrize(("make", "expected"), KUBECONFIG_CASES)
async def test_a_kubeconfig_that_cannot_be_read(
    tmp_path: Path, make: Callable[[Path], Path], expected: str
) -> None:
    path = make(tmp_path)
    code, stderr = await run_to_exit(kubetrio("run", "--kubeconfig", str(path), *NO_PORTS))
    assert code == 1
    assert the_line(stderr).startswith("kubetrio: kubeconfig ") and expected in stderr, stderr


async def test_no_kubeconfig_anywhere_says_where_one_was_looked_for(tmp_path: Path) -> None:
    """Outside a pod, without --kubeconfig, $KUBECONFIG or ~/.kube/config: not "no such file
    ~/.kube/config" alone, which hides that --kubeconfig and the in-cluster config were
    tried too (client-go: "invalid configuration: no configuration has been provided")."""
    env = environment()
    env["HOME"] = str(tmp_path)
    env.pop("KUBERNETES_SERVICE_HOST", None)
    with trio.fail_after(60):
        proc = await trio.run_process(
            kubetrio("run", *NO_PORTS), capture_stderr=True, check=False, env=env
        )
    assert proc.returncode == 1
    assert the_line(proc.stderr.decode()) == (
        "kubetrio: no kubeconfig: give --kubeconfig or set KUBECONFIG (not in a pod: "
        f"KUBERNETES_SERVICE_HOST is unset; {tmp_path}/.kube/config does not exist)"
    )


async def test_a_context_the_kubeconfig_lacks(emu: Emulator) -> None:
    code, stderr = await run_to_exit(
        kubetrio("run", "--kubeconfig", str(emu.kubeconfig_path), "--context", "prod", *NO_PORTS)
    )
    assert code == 1
    assert the_line(stderr).endswith(": no context named 'prod'")


@pytest.mark.parametrize(
    ("user", "expected"),
    [
        pytest.param(
            {"client-certificate": "absent.crt", "client-key": "absent.key"},
            "'absent.crt' file does not exist",
            id="missing-cert",
        ),
        pytest.param(
            {"client-certificate": "junk.pem", "client-key": "junk.pem"},
            "client-certificate ",
            id="unreadable-cert",
        ),
    ],
)
async def test_a_client_certificate_that_cannot_be_loaded(
    emu: Emulator, tmp_path: Path, user: dict[str, str], expected: str
) -> None:
    (tmp_path / "junk.pem").write_text("not a certificate\n")

    def edit(doc: Any) -> None:
        doc["users"][0]["user"] = user

    path = edited_kubeconfig(emu, tmp_path, edit)
    code, stderr = await run_to_exit(kubetrio("run", "--kubeconfig", str(path), *NO_PORTS))
    assert code == 1
    line = the_line(stderr)
    assert line.startswith(f"kubetrio: kubeconfig {path}: "), line
    assert expected in line, line


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(None, "cannot read it: No such file or directory", id="missing"),
        pytest.param("metricsBindAddress: [\n", "invalid YAML", id="yaml"),
        pytest.param("leaderElection:\n  leaseDurration: 15s\n", "leaseDurration", id="field"),
    ],
)
async def test_a_config_file_that_cannot_be_used(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "kubetrio.yaml"
    if content is not None:
        path.write_text(content)
    code, stderr = await run_to_exit(kubetrio("run", "--config", str(path)))
    assert code == 2
    line = the_line(stderr)
    assert line.startswith(f"kubetrio: config file {path}: "), line
    assert expected in line, line


async def test_a_service_account_without_list_rights_is_told_what_to_grant(
    emu: Emulator, client: EmuClient, tmp_path: Path
) -> None:
    await service_account(client, "labeler")
    sa_token = await token(client, "labeler")

    def edit(doc: Any) -> None:
        doc["users"][0]["user"]["token"] = sa_token

    path = edited_kubeconfig(emu, tmp_path, edit)
    code, stderr = await run_to_exit(
        kubetrio("run", "--kubeconfig", str(path), "--controllers", "example", *NO_PORTS, *QUIET)
    )
    assert code == 1
    line = the_line(stderr)
    assert line.startswith("kubetrio: RBAC: the ServiceAccount default/labeler cannot list "), line
    assert "; grant it list and watch on " in line, line


BUGGY_PLUGIN = textwrap.dedent(
    """
    def setup(manager, config):
        return 1 / 0  # a bug, not something an operator can fix
    """
)


async def test_a_bug_keeps_its_traceback(emu: Emulator, tmp_path: Path) -> None:
    plugins = install_plugin(tmp_path / "plugins", BUGGY_PLUGIN, {"buggy": "setup"})
    code, stderr = await run_to_exit(
        kubetrio(
            "run", "--kubeconfig", str(emu.kubeconfig_path), "--controllers", "buggy", *NO_PORTS
        ),
        plugins,
    )
    assert code == 1
    assert "Traceback (most recent call last)" in stderr, stderr
    assert stderr.rstrip().endswith("ZeroDivisionError: division by zero"), stderr
    assert "kt_test_plugin.py" in stderr


async def test_the_emulator_on_a_port_in_use(taken_port: int) -> None:
    code, stderr = await run_to_exit(kubetrio("emulator", "--port", str(taken_port)))
    assert code == 1
    assert the_line(stderr) == (
        f"kubetrio emulator: cannot listen on 127.0.0.1:{taken_port}: Address already in use; "
        "free the port or choose another with --port (0 picks a free one)"
    )


async def test_an_embedded_dir_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    code, stderr = await run_to_exit(
        kubetrio("run", "--embedded", "--embedded-dir", str(blocker / "cluster"), *NO_PORTS)
    )
    assert code == 1
    assert the_line(stderr) == (
        f"kubetrio: --embedded-dir {blocker / 'cluster'}: cannot create it (Not a directory); "
        "choose a directory this user can write"
    )
