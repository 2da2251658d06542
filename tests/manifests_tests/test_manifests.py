"""Offline checks of the operator's install manifests (``manifests/``) and image (``Dockerfile``).

They pin what a reviewer would otherwise have to re-check by eye: the kustomization installs
every file and nothing else, RBAC grants exactly the listed verbs and says why for each one,
the Deployment runs hardened and probed, and the image runs as the UID the Deployment expects.
"""

from __future__ import annotations

import pathlib
import re
from typing import Any

import pytest
import yaml
from gangsched.shell import permissions

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
NAMESPACE = "gangsched-system"
UID = 65532
RBAC_FILES = ["clusterrole.yaml", "role.yaml"]

def _table(namespaced: bool) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for p in permissions.NEEDED:
        if p.namespaced == namespaced:
            out.setdefault((p.group, p.resource), set()).add(p.verb)
    return out


# (apiGroup, resource) -> verbs: exactly what the code calls (shell/permissions.py, which the
# shell tests check against every request the operator sends). Both directions compared.
CLUSTER_GRANTS = _table(namespaced=False)
LEASE_GRANTS = _table(namespaced=True)


def load_all(path: pathlib.Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def load_one(name: str) -> dict[str, Any]:
    (doc,) = load_all(MANIFESTS / name)
    return doc


def grants(role: dict[str, Any]) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for rule in role["rules"]:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                out.setdefault((group, resource), set()).update(rule["verbs"])
    return out


def container() -> dict[str, Any]:
    (only,) = load_one("deployment.yaml")["spec"]["template"]["spec"]["containers"]
    return only


# --- kustomization --------------------------------------------------------------------------


def test_kustomization_lists_every_manifest_and_nothing_else() -> None:
    kustomization = load_one("kustomization.yaml")
    resources = kustomization["resources"]
    on_disk = sorted(p.name for p in MANIFESTS.glob("*.yaml") if p.name != "kustomization.yaml")
    assert sorted(resources) == on_disk
    assert len(resources) == len(set(resources))
    assert not any("crds" in r for r in resources), "CRDs are applied separately"


@pytest.mark.parametrize("name", sorted(p.name for p in MANIFESTS.glob("*.yaml")))
def test_every_manifest_is_one_labelled_object_in_the_right_namespace(name: str) -> None:
    obj = load_one(name)
    assert obj["apiVersion"] and obj["kind"]
    if obj["kind"] == "Kustomization":
        return
    assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == "gangsched"
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding", "FlowSchema",
                      "PriorityLevelConfiguration"}
    if obj["kind"] not in cluster_scoped:
        assert obj["metadata"]["namespace"] == NAMESPACE


# --- RBAC -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param("clusterrole.yaml", CLUSTER_GRANTS, id="clusterrole"),
        pytest.param("role.yaml", LEASE_GRANTS, id="role"),
    ],
)
def test_rbac_grants_exactly_the_listed_verbs(
    name: str, expected: dict[tuple[str, str], set[str]]
) -> None:
    role = load_one(name)
    assert grants(role) == expected
    for rule in role["rules"]:
        assert "*" not in rule["apiGroups"] + rule["resources"] + rule["verbs"]
        assert "nonResourceURLs" not in rule


def test_lease_role_is_namespaced_and_pinned_to_one_lease() -> None:
    role = load_one("role.yaml")
    assert role["kind"] == "Role"
    assert role["metadata"]["namespace"] == NAMESPACE
    for rule in role["rules"]:
        if set(rule["verbs"]) - {"create"}:
            assert rule["resourceNames"] == ["gangsched-leader"]


@pytest.mark.parametrize("name", RBAC_FILES)
def test_every_rbac_rule_and_verb_carries_its_reason(name: str) -> None:
    """Verbs must be written one per line with a ``# reason``; each rule has a comment above."""
    lines = (MANIFESTS / name).read_text().splitlines()
    commented: list[str] = []
    in_verbs = False
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped.startswith("- apiGroups:"):
            previous = lines[number - 1].strip()
            assert previous.startswith("#"), f"{name}:{number + 1}: rule without a comment"
        if stripped == "verbs:":
            in_verbs = True
            continue
        verb = re.fullmatch(r"- ([a-z]+)\s+#\s*(\S.{9,})", stripped)
        if in_verbs and verb:
            commented.append(verb.group(1))
        else:
            in_verbs = False
    written = [verb for rule in load_one(name)["rules"] for verb in rule["verbs"]]
    assert commented == written, "some verbs are not one per line with a reason"


@pytest.mark.parametrize(
    ("binding", "role_kind", "role_name"),
    [
        ("clusterrolebinding.yaml", "ClusterRole", "gangsched"),
        ("rolebinding.yaml", "Role", "gangsched-leader-election"),
    ],
)
def test_bindings_give_the_roles_to_the_operator(
    binding: str, role_kind: str, role_name: str
) -> None:
    obj = load_one(binding)
    account = load_one("serviceaccount.yaml")["metadata"]
    assert obj["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name,
    }
    assert obj["subjects"] == [
        {"kind": "ServiceAccount", "name": account["name"], "namespace": account["namespace"]}
    ]


# --- Deployment -----------------------------------------------------------------------------


def test_deployment_runs_the_image_as_the_operator() -> None:
    deployment = load_one("deployment.yaml")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 1
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    assert pod["serviceAccountName"] == load_one("serviceaccount.yaml")["metadata"]["name"]
    assert pod.get("automountServiceAccountToken", True) is True
    main = container()
    assert main["image"] == "ghcr.io/gangsched/gangsched:0.1.0"
    assert main["command"] == ["gangsched", "run"]
    assert "--liveness=http://0.0.0.0:8080/healthz" in main["args"]


def test_deployment_is_hardened() -> None:
    pod = load_one("deployment.yaml")["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] == UID
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")
    security = container()["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["runAsUser"] == UID
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert "privileged" not in security


def test_deployment_has_resources_probe_ports_env_and_scratch_space() -> None:
    pod = load_one("deployment.yaml")["spec"]["template"]["spec"]
    main = container()
    for bound in ("requests", "limits"):
        assert set(main["resources"][bound]) == {"cpu", "memory"}
    ports = {p["name"]: p["containerPort"] for p in main["ports"]}
    assert ports == {"healthz": 8080, "metrics": 9090}
    probe = main["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"
    assert ports.get(probe["port"], probe["port"]) == 8080
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in main["env"]}
    assert env == {"GANGSCHED_NAMESPACE": "metadata.namespace", "POD_NAME": "metadata.name"}
    mounts = {m["name"]: m["mountPath"] for m in main["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts == {"tmp": "/tmp"}
    assert "emptyDir" in volumes["tmp"]


def test_namespace_enforces_the_restricted_pod_security_standard() -> None:
    namespace = load_one("namespace.yaml")
    assert namespace["metadata"]["name"] == NAMESPACE
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


# --- image ----------------------------------------------------------------------------------


def test_dockerfile_is_multi_stage_non_root_and_runs_gangsched() -> None:
    text = (ROOT / "Dockerfile").read_text()
    lines = [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    bases = [line.split()[1] for line in lines if line.startswith("FROM ")]
    assert len(bases) >= 2
    assert all(base == "python:3.11-slim" for base in bases)
    assert "pip install ." in text
    users = [line for line in lines if line.startswith("USER ")]
    assert users[-1] == f"USER {UID}:{UID}"
    assert 'ENTRYPOINT ["gangsched"]' in lines
    assert 'CMD ["run"]' in lines


def test_dockerignore_keeps_the_context_to_the_package() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert patterns[0] == "*", "allow-list: ignore everything, then re-include"
    assert {"!pyproject.toml", "!operator/"} <= set(patterns)
    assert not any(p.startswith("!") and p.strip("!/") in {"tests", ".git"} for p in patterns)


def test_deployment_is_critical_and_has_time_to_release_the_lease() -> None:
    """Shutdown takes status flush + kopf stop + Lease release, each bounded by the
    operator's ``shutdown_timeout``: the grace period must cover them with room."""
    from gangsched.shell.settings import OperatorSettings

    pod = load_one("deployment.yaml")["spec"]["template"]["spec"]
    assert pod["priorityClassName"] == "system-cluster-critical"
    assert pod["terminationGracePeriodSeconds"] >= 2 * 3 * OperatorSettings().shutdown_timeout


def test_flowschema_sends_the_service_account_to_its_own_priority_level() -> None:
    flow = load_one("flowschema.yaml")
    level = load_one("prioritylevel.yaml")
    assert flow["apiVersion"] == level["apiVersion"] == "flowcontrol.apiserver.k8s.io/v1"
    assert flow["spec"]["priorityLevelConfiguration"]["name"] == level["metadata"]["name"]
    assert 800 < flow["spec"]["matchingPrecedence"] < 9000
    [rule] = flow["spec"]["rules"]
    [subject] = rule["subjects"]
    account = load_one("serviceaccount.yaml")["metadata"]
    assert subject["serviceAccount"] == {"name": account["name"],
                                         "namespace": account["namespace"]}
    assert level["spec"]["type"] == "Limited"
    assert level["spec"]["limited"]["lendablePercent"] == 0


def test_kustomization_image_override_names_the_deployments_image() -> None:
    [image] = load_one("kustomization.yaml")["images"]
    assert image["name"] == container()["image"].rsplit(":", 1)[0]


def _readme_section(title: str) -> str:
    text = (ROOT / "README.md").read_text()
    start = text.index(f"\n### {title}\n")
    end = text.find("\n#", start + len(title) + 6)
    return text[start:end if end > 0 else None]


def test_readme_builds_the_image_loads_it_and_points_the_kustomization_at_it() -> None:
    """The manifests name an image nothing publishes for a local cluster: the README
    builds it from the repository's Dockerfile, loads it into kind and k3s, and overrides
    the kustomization's ``images:`` entry, under the name the Deployment uses."""
    section = _readme_section("The image")
    build = re.search(r"docker build -t (\S+) \.", section)
    assert build is not None and (ROOT / "Dockerfile").is_file()
    tag = build.group(1)
    assert f"kind load docker-image {tag}" in section
    assert re.search(rf"docker save {re.escape(tag)} \| .*k3s ctr images import -", section)
    [image] = load_one("kustomization.yaml")["images"]
    assert f"kustomize edit set image {image['name']}={tag}" in section
    assert container()["imagePullPolicy"] == "IfNotPresent"  # a loaded image is not pulled


def test_readme_says_placeholders_count_against_resourcequota() -> None:
    section = _readme_section("Running in production")
    assert "ResourceQuota" in section and "placeholder" in section.lower()
    from gangsched.shell.settings import OperatorSettings
    assert f"{OperatorSettings().placeholder_grace} s grace period" in section
    assert "never force-deleted" in section
