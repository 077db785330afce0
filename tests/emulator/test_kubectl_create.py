"""Every imperative ``kubectl create`` subcommand and ``kubectl run``, across kubectl versions.

kubectl 1.32 and later send built-in kinds as protobuf; 1.27-1.31 send JSON. Whatever the
encoding, what is read back as JSON must carry the fields the command sets.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import trio

from kubetrio.emulator import Emulator
from tests.helpers.kube import Kubectl, kubectl_of

pytestmark = pytest.mark.kubectl

VERSIONS = ["1.27", "1.31", "1.32", "1.33"]


@pytest.fixture(params=VERSIONS)
def kubectl_v(request: pytest.FixtureRequest, emu: Emulator, tmp_path: Path) -> Kubectl:
    return kubectl_of(request.param, emu, tmp_path)


def tls_pair(tmp_path: Path) -> tuple[Path, Path]:
    crt, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(crt),
            "-subj",
            "/CN=example",
            "-days",
            "1",
        ],
        check=True,
        capture_output=True,
    )
    return crt, key


def b64(text: str | bytes) -> str:
    return base64.b64encode(text.encode() if isinstance(text, str) else text).decode()


@pytest.mark.process
@pytest.mark.slow
async def test_every_imperative_create(kubectl_v: Kubectl, tmp_path: Path) -> None:
    k = kubectl_v
    crt, key = tls_pair(tmp_path)
    (tmp_path / "greeting.txt").write_text("hello\n")
    creates = [
        ("namespace", "team"),
        ("clusterrole", "reader", "--verb=get,list", "--resource=pods"),
        ("clusterrolebinding", "reader", "--clusterrole=reader", "--user=alice"),
        ("configmap", "cm", "--from-literal=a=b", f"--from-file={tmp_path / 'greeting.txt'}"),
        ("cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *", "--", "echo", "hi"),
        ("deployment", "web", "--image=nginx", "--replicas=2", "--port=80"),
        ("ingress", "ing", "--rule=foo.com/bar=svc1:8080,tls=my-cert"),
        ("job", "once", "--image=busybox", "--", "echo", "hi"),
        ("job", "from-cj", "--from=cronjob/cj"),
        ("poddisruptionbudget", "pdb", "--selector=app=web", "--min-available=1"),
        ("priorityclass", "high", "--value=1000", "--description=important"),
        ("quota", "q", "--hard=cpu=1,memory=1G,pods=2"),
        ("role", "pod-reader", "--verb=get", "--resource=pods"),
        ("rolebinding", "rb", "--role=pod-reader", "--serviceaccount=default:bot"),
        (
            "secret",
            "docker-registry",
            "pull",
            "--docker-username=u",
            "--docker-password=p",
            "--docker-server=r.example",
        ),
        ("secret", "generic", "gen", "--from-literal=k=v"),
        ("secret", "tls", "cert", f"--cert={crt}", f"--key={key}"),
        ("service", "clusterip", "svc-c", "--tcp=80:8080"),
        ("service", "externalname", "svc-e", "--external-name=ex.example"),
        ("service", "loadbalancer", "svc-l", "--tcp=80:8080"),
        ("service", "nodeport", "svc-n", "--tcp=80:8080", "--node-port=30080"),
        ("serviceaccount", "bot"),
    ]
    for args in creates:
        out = await k.out("create", *args)
        assert "created" in out, (args, out)
    # Which encoding this version speaks (so the protobuf path is known to be exercised).
    verbose = (await k.run("create", "serviceaccount", "probe", "-v=8")).stderr.decode()
    sent_protobuf = "Content-Type: application/vnd.kubernetes.protobuf" in verbose
    version = tuple(int(p) for p in k.binary.rsplit("kubectl.", 1)[1].split("."))
    assert sent_protobuf == (version >= (1, 32)), verbose[-2000:]
    out = await k.out("run", "pod1", "--image=nginx", "--labels=app=x", "--env=A=B", "--port=80")
    assert "pod/pod1 created" in out

    got: dict[tuple[str, str], Any] = {}
    doc = await k.json("get", "namespace,clusterrole,clusterrolebinding,priorityclass")
    doc2 = await k.json(
        "get",
        "configmap,cronjob,deployment,ingress,job,pdb,quota,role,rolebinding,secret,service,"
        "serviceaccount,pod",
    )
    for item in doc["items"] + doc2["items"]:
        got[(item["kind"], item["metadata"]["name"])] = item
    for item in got.values():
        assert item["metadata"]["uid"] and item["metadata"]["creationTimestamp"]

    assert got[("Namespace", "team")]["spec"] == {"finalizers": ["kubernetes"]}
    assert got[("ClusterRole", "reader")]["rules"] == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}
    ]
    crb = got[("ClusterRoleBinding", "reader")]
    assert crb["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "reader",
    }
    assert crb["subjects"] == [
        {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}
    ]
    assert got[("ConfigMap", "cm")]["data"] == {"a": "b", "greeting.txt": "hello\n"}

    cj = got[("CronJob", "cj")]
    assert cj["spec"]["schedule"] == "*/5 * * * *"
    cj_pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert cj_pod["containers"][0]["command"] == ["echo", "hi"]
    assert cj_pod["restartPolicy"] == "OnFailure"

    web = got[("Deployment", "web")]
    assert web["spec"]["replicas"] == 2
    assert web["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    container = web["spec"]["template"]["spec"]["containers"][0]
    assert (container["image"], container["ports"]) == (
        "nginx",
        [{"containerPort": 80, "protocol": "TCP"}],  # the protocol is API defaulting's
    )
    # Zero-valued structs travel as in Go's JSON: present and empty, with a null timestamp.
    assert web["spec"]["template"]["metadata"]["creationTimestamp"] is None
    assert container["resources"] == {}

    ing = got[("Ingress", "ing")]["spec"]
    assert ing["rules"] == [
        {
            "host": "foo.com",
            "http": {
                "paths": [
                    {
                        "backend": {"service": {"name": "svc1", "port": {"number": 8080}}},
                        "path": "/bar",
                        "pathType": "Exact",
                    }
                ]
            },
        }
    ]
    assert ing["tls"] == [{"hosts": ["foo.com"], "secretName": "my-cert"}]

    once = got[("Job", "once")]["spec"]["template"]["spec"]
    assert once["containers"][0]["command"] == ["echo", "hi"]
    assert once["restartPolicy"] == "Never"
    from_cj = got[("Job", "from-cj")]
    assert from_cj["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    assert from_cj["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert from_cj["metadata"]["ownerReferences"][0]["uid"] == cj["metadata"]["uid"]

    pdb = got[("PodDisruptionBudget", "pdb")]["spec"]
    # IntOrString: an int stays an int.
    assert pdb == {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}
    pc = got[("PriorityClass", "high")]
    assert (pc["value"], pc["description"]) == (1000, "important")
    assert got[("ResourceQuota", "q")]["spec"]["hard"] == {"cpu": "1", "memory": "1G", "pods": "2"}
    assert got[("Role", "pod-reader")]["rules"][0]["verbs"] == ["get"]
    rb = got[("RoleBinding", "rb")]
    assert rb["subjects"] == [{"kind": "ServiceAccount", "name": "bot", "namespace": "default"}]

    pull = got[("Secret", "pull")]
    assert pull["type"] == "kubernetes.io/dockerconfigjson"
    assert b"r.example" in base64.b64decode(pull["data"][".dockerconfigjson"])
    assert got[("Secret", "gen")]["data"] == {"k": b64("v")}
    cert = got[("Secret", "cert")]
    assert cert["type"] == "kubernetes.io/tls"
    assert base64.b64decode(cert["data"]["tls.crt"]) == crt.read_bytes()
    assert base64.b64decode(cert["data"]["tls.key"]) == key.read_bytes()

    svc_c = got[("Service", "svc-c")]["spec"]
    assert svc_c["type"] == "ClusterIP"
    assert svc_c["selector"] == {"app": "svc-c"}
    port = svc_c["ports"][0]
    # targetPort is an IntOrString.
    assert (port["name"], port["port"], port["targetPort"]) == ("80-8080", 80, 8080)
    svc_e = got[("Service", "svc-e")]["spec"]
    assert (svc_e["type"], svc_e["externalName"]) == ("ExternalName", "ex.example")
    assert got[("Service", "svc-l")]["spec"]["type"] == "LoadBalancer"
    svc_n = got[("Service", "svc-n")]["spec"]
    assert (svc_n["type"], svc_n["ports"][0]["nodePort"]) == ("NodePort", 30080)
    assert ("ServiceAccount", "bot") in got

    # Errors come back as a Status client-go decodes (protobuf for 1.32+).
    proc = await k.run("create", "namespace", "team", check=False)
    assert b'Error from server (AlreadyExists): namespaces "team" already exists' in proc.stderr
    proc = await k.run("create", "job", "j", "--from=cronjob/missing", check=False)
    assert b'Error from server (NotFound): cronjobs.batch "missing" not found' in proc.stderr
    proc = await k.run("create", "configmap", "Bad_Name", check=False)
    assert b'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value' in proc.stderr

    pod = got[("Pod", "pod1")]
    assert pod["metadata"]["labels"] == {"app": "x"}
    c = pod["spec"]["containers"][0]
    assert (c["image"], c["env"], c["ports"]) == (
        "nginx",
        [{"name": "A", "value": "B"}],
        [{"containerPort": 80, "protocol": "TCP"}],
    )


async def test_yaml_replace_delete_after_protobuf_create(kubectl: Kubectl, tmp_path: Path) -> None:
    """kubectl 1.33 creates in protobuf; reading, replacing and deleting the object then work."""
    assert "created" in await kubectl.out("create", "configmap", "cm", "--from-literal=a=b")
    text = await kubectl.out("get", "configmap", "cm", "-o", "yaml")
    assert "a: b" in text
    (tmp_path / "cm.yaml").write_text(text.replace("a: b", "a: c"))
    assert "replaced" in await kubectl.out("replace", "-f", str(tmp_path / "cm.yaml"))
    assert (await kubectl.json("get", "configmap", "cm"))["data"] == {"a": "c"}
    assert "deleted" in await kubectl.out("delete", "configmap", "cm")
    proc = await kubectl.run("get", "configmap", "cm", check=False)
    assert proc.returncode != 0 and b"NotFound" in proc.stderr


@pytest.mark.slow
async def test_printer_columns_of_created_kinds(kubectl: Kubectl) -> None:
    """``kubectl get -o wide`` prints kube's columns for the kinds imperative create makes."""
    for args in [
        ("service", "clusterip", "svc-c", "--tcp=80:8080"),
        ("service", "externalname", "svc-e", "--external-name=ex.example"),
        ("service", "loadbalancer", "svc-l", "--tcp=80:8080"),
        ("service", "nodeport", "svc-n", "--tcp=80:8080", "--node-port=30080"),
        ("serviceaccount", "bot"),
        ("job", "once", "--image=busybox"),
        ("cronjob", "cj", "--image=busybox", "--schedule=*/5 * * * *"),
        ("ingress", "ing", "--rule=foo.com/bar=svc1:8080,tls=my-cert"),
        ("ingress", "plain", "--class=nginx", "--rule=/path=svc:80"),
        ("priorityclass", "high", "--value=1000"),
        ("quota", "q", "--hard=cpu=1,pods=2,limits.cpu=2"),
        ("role", "pod-reader", "--verb=get", "--resource=pods"),
        ("rolebinding", "rb", "--role=pod-reader", "--serviceaccount=default:bot", "--user=al"),
        ("clusterrole", "reader", "--verb=get", "--resource=pods"),
        ("clusterrolebinding", "crb", "--clusterrole=reader", "--group=devs"),
    ]:
        await kubectl.run("create", *args)

    async def rows(resource: str) -> list[list[str]]:
        out = await kubectl.out("get", resource, "-o", "wide")
        lines = [line for line in out.splitlines() if "system:" not in line]
        return [[cell for cell in line.split("  ") if cell.strip()] for line in lines]

    def strip(table: list[list[str]]) -> list[list[str]]:
        return [[c.strip() for c in row] for row in table]

    svc = strip(await rows("services"))
    assert svc[0] == [
        "NAME",
        "TYPE",
        "CLUSTER-IP",
        "EXTERNAL-IP",
        "PORT(S)",
        "AGE",
        "SELECTOR",
    ]
    by_name = {r[0]: r for r in svc[1:]}
    assert by_name["svc-e"][1:5] == ["ExternalName", "<none>", "ex.example", "<none>"]
    assert by_name["svc-l"][3] == "<pending>"
    assert re.fullmatch(r"80:3[0-9]{4}/TCP", by_name["svc-l"][4])  # an allocated node port
    assert by_name["svc-n"][4] == "80:30080/TCP" and by_name["svc-n"][6] == "app=svc-n"
    assert strip(await rows("serviceaccounts"))[0] == ["NAME", "SECRETS", "AGE"]
    jobs = strip(await rows("jobs"))
    assert jobs[0][:5] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert jobs[1][:3] == ["once", "Running", "0/1"]
    cj = strip(await rows("cronjobs"))
    assert cj[0][:7] == [
        "NAME",
        "SCHEDULE",
        "TIMEZONE",
        "SUSPEND",
        "ACTIVE",
        "LAST SCHEDULE",
        "AGE",
    ]
    assert cj[1][:6] == ["cj", "*/5 * * * *", "<none>", "False", "0", "<none>"]
    ing = {r[0]: r for r in strip(await rows("ingresses"))}
    assert ing["NAME"] == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"]
    assert ing["ing"][1:3] == ["<none>", "foo.com"] and "80, 443" in ing["ing"]
    assert ing["plain"][1:3] == ["nginx", "*"]
    pc = strip(await rows("priorityclasses"))
    assert pc[0] == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
    assert next(r for r in pc if r[0] == "high")[1:3] == ["1000", "false"]
    quota = strip(await rows("resourcequotas"))
    assert quota[0] == ["NAME", "AGE", "REQUEST", "LIMIT"]
    assert quota[1][2:] == ["cpu: 0/1, pods: 0/2", "limits.cpu: 0/2"]
    assert strip(await rows("roles"))[0] == ["NAME", "CREATED AT"]
    assert strip(await rows("clusterroles"))[0] == ["NAME", "CREATED AT"]
    rb = strip(await rows("rolebindings"))
    assert rb[0] == ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    assert rb[1][:2] == ["rb", "Role/pod-reader"] and rb[1][-1] == "default/bot"
    crb = {r[0]: r for r in strip(await rows("clusterrolebindings"))}
    assert crb["crb"][1] == "ClusterRole/reader" and crb["crb"][-1] == "devs"


@pytest.mark.process
@pytest.mark.slow
async def test_protobuf_and_json_creates_store_the_same(emu: Emulator, tmp_path: Path) -> None:
    """The same commands from kubectl 1.31 (JSON) and 1.33 (protobuf) store identical objects:
    the protobuf mapping adds, drops and reshapes nothing."""
    crt, key = tls_pair(tmp_path)
    commands = [
        ("configmap", "cm", "--from-literal=a=b", "--from-literal=n=1"),
        ("cronjob", "cj", "--image=busybox", "--schedule=@hourly", "--", "sh", "-c", "true"),
        ("deployment", "web", "--image=nginx", "--replicas=3", "--port=8080"),
        ("ingress", "ing", "--class=nginx", "--rule=foo.com/*=svc:http,tls", "--annotation=a=b"),
        ("job", "once", "--image=busybox"),
        ("poddisruptionbudget", "pdb", "--selector=app=web", "--max-unavailable=30%"),
        ("quota", "q", "--hard=cpu=500m,requests.memory=1Gi", "--scopes=BestEffort"),
        ("role", "r", "--verb=get,watch", "--resource=pods,deployments.apps"),
        ("rolebinding", "rb", "--clusterrole=view", "--group=devs", "--user=al"),
        ("secret", "tls", "cert", f"--cert={crt}", f"--key={key}"),
        ("secret", "generic", "gen", "--from-literal=k=v", "--type=Opaque"),
        ("service", "nodeport", "np", "--tcp=80:http", "--node-port=30081"),
        ("service", "loadbalancer", "lb", "--tcp=443:8443,80:8080"),
        ("serviceaccount", "bot"),
    ]
    seen: list[list[dict[str, Any]]] = []
    for version in ("1.31", "1.33"):
        k = kubectl_of(version, emu, tmp_path)
        ns = f"v{version.replace('.', '')}"
        await k.run("create", "namespace", ns)
        for args in commands:
            args = tuple(a.replace("30081", "30082") if version == "1.33" else a for a in args)
            await k.run("-n", ns, "create", *args)
        await k.run("-n", ns, "run", "p", "--image=nginx", "--env=A=B", "--labels=a=b")
        doc = await k.json(
            "-n",
            ns,
            "get",
            "cm,cj,deploy,ing,job,pdb,quota,role,rolebinding,secret,svc,sa,pod",
        )
        items = []
        for item in doc["items"]:
            # Allocated per object: the uid (also in a Job's generated selector), cluster IPs and
            # a pod's generated token volume name.
            text = json.dumps(item).replace(item["metadata"]["uid"], "UID")
            item = json.loads(re.sub(r"kube-api-access-[a-z0-9]{5}", "kube-api-access-X", text))
            (item.get("spec") or {}).pop("clusterIP", None)
            (item.get("spec") or {}).pop("clusterIPs", None)
            md = item["metadata"]
            for volatile in ("uid", "resourceVersion", "creationTimestamp", "namespace"):
                md.pop(volatile, None)
            for port in (item.get("spec") or {}).get("ports") or []:
                port.pop("nodePort", None)
            items.append(item)
        seen.append(sorted(items, key=lambda i: (i["kind"], i["metadata"]["name"])))
    json_made, protobuf_made = seen
    assert [(i["kind"], i["metadata"]["name"]) for i in json_made] == [
        (i["kind"], i["metadata"]["name"]) for i in protobuf_made
    ]
    for a, b in zip(json_made, protobuf_made, strict=True):
        assert a == b, a["kind"]


def event(name: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
        "reason": "Testing",
        "message": message,
        "type": "Normal",
        "count": 1,
        "source": {"component": "test"},
    }


@pytest.mark.parametrize("version", ["1.31", "1.33"])
async def test_kubectl_events_watch(emu: Emulator, tmp_path: Path, version: str) -> None:
    """``kubectl events --watch`` lists then watches with client-go's typed client: protobuf
    from 1.32 on (length-framed WatchEvents), JSON before."""
    k = kubectl_of(version, emu, tmp_path)
    emu.create(event("e1", "before the watch"))
    proc = await trio.lowlevel.open_process(
        [k.binary, "events", "--watch"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=k.env
    )
    assert proc.stdout is not None
    out = b""
    try:
        with trio.fail_after(30):
            while b"before the watch" not in out:
                data = await proc.stdout.receive_some(4096)
                assert data, out
                out += data
            emu.create(event("e2", "during the watch"))
            while b"during the watch" not in out:
                data = await proc.stdout.receive_some(4096)
                assert data, out
                out += data
    finally:
        proc.kill()
        await proc.wait()
    assert out.decode().splitlines()[0].split() == [
        "LAST",
        "SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "MESSAGE",
    ]
    assert b"Pod/p1" in out
