"""The Helm chart (charts/gangsched), rendered by the real helm.

What they pin: the default render is the kustomize install (``manifests/``), object for
object, so the two cannot drift; the chart's CRDs are the project's; every values file
shipped in ``ci/`` lints and renders into objects that fit together (Services select the
pods and name their ports, the ServiceMonitor selects the metrics Service, bindings name
the ServiceAccount); the Deployment's arguments are ones ``gangsched run`` accepts and its
profile one the operator reads; the schema refuses a wrong value with its path; NOTES
tell how to check the install. Each helm call takes a few tenths of a second.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
from typing import Any

import manifests_tests.test_crds as crd_checks
import pytest
import yaml
from charts_tests import helm
from gangsched import cli
from gangsched.translate.profile import profile_from_k8s

ROOT = helm.ROOT
CHART = helm.CHART
HELM_ONLY_LABELS = {"app.kubernetes.io/instance", "app.kubernetes.io/managed-by",
                    "app.kubernetes.io/version", "helm.sh/chart"}
"""Labels only one side sets: Helm's own, and the version the chart puts on every object
(manifests/ puts it on the Deployment alone)."""
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "FlowSchema",
                  "PriorityLevelConfiguration", "Queue"}
ALL_VALUES = [None, *helm.VALUES_FILES]
values_params = pytest.mark.parametrize("values_file", ALL_VALUES,
                                        ids=lambda v: v or "default")


def load_sync() -> Any:
    spec = importlib.util.spec_from_file_location("sync_chart",
                                                  ROOT / "scripts" / "sync-chart.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def strip_helm_labels(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without the labels in HELM_ONLY_LABELS, on it and on a pod template."""
    for meta in (obj["metadata"], obj.get("spec", {}).get("template", {}).get("metadata")):
        if meta and "labels" in meta:
            for label in HELM_ONLY_LABELS:
                meta["labels"].pop(label, None)
    return obj


def keyed(objects: Any) -> dict[tuple[str, str, str], dict[str, Any]]:
    out = {}
    for obj in objects:
        key = (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        assert key not in out, f"{key} twice"
        out[key] = strip_helm_labels(obj)
    return out


def deployment(objects: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    return helm.one(objects, "Deployment")


def container(objects: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    (only,) = deployment(objects)["spec"]["template"]["spec"]["containers"]
    return only


def parse_run(args: list[str]) -> Any:
    """``args`` as ``gangsched run`` reads them (argparse exits on one it does not know)."""
    return cli.build_parser().parse_args(["run", *args])


def values_of(values_file: str | None) -> dict[str, Any]:
    """The chart's values with ``values_file`` merged over them, as helm merges them."""
    def merge(base: Any, over: Any) -> Any:
        if isinstance(base, dict) and isinstance(over, dict):
            return {**base, **{k: merge(base.get(k), v) for k, v in over.items()}}
        return over
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    if values_file is not None:
        values = merge(values, yaml.safe_load((CHART / "ci" / values_file).read_text()))
    return values  # type: ignore[no-any-return]


# --- one source: the chart and the kustomize install ------------------------------------


def test_the_charts_copies_of_crds_and_rbac_are_current() -> None:
    stale = load_sync().stale()
    assert stale == [], f"{stale}: run python3 scripts/sync-chart.py"


def test_the_chart_ships_exactly_the_projects_crds_byte_for_byte() -> None:
    ours = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    chart = {p.name: p.read_bytes() for p in (CHART / "crds").iterdir()}
    assert chart == ours


def test_the_default_render_is_the_kustomize_install() -> None:
    """Helm installs in a namespace that exists (--create-namespace), so the default
    render has no Namespace; with namespace.create it is the kustomize install whole."""
    want = keyed(helm.kustomize())
    with_namespace = keyed(helm.render(None, "namespace.create=true"))
    assert sorted(with_namespace) == sorted(want)
    for key, obj in want.items():
        assert with_namespace[key] == obj, f"{key} differs from manifests/"
    default = keyed(helm.render())
    assert sorted(default) == sorted(k for k in want if k[0] != "Namespace")


def test_the_comparison_sees_a_change_of_the_manifests() -> None:
    """The comparison is not blind: a manifest with one changed field no longer matches."""
    changed = keyed(helm.kustomize())
    key = ("Deployment", helm.NAMESPACE, "gangsched")
    changed[key]["spec"]["template"]["spec"]["containers"][0]["args"].append("--debug")
    assert keyed(helm.render(None, "namespace.create=true"))[key] != changed[key]


# --- every values file ------------------------------------------------------------------


@values_params
def test_lint_passes_strict(values_file: str | None) -> None:
    args = [] if values_file is None else ["-f", str(CHART / "ci" / values_file)]
    done = helm.run("lint", "--strict", str(CHART), "--namespace", helm.NAMESPACE, *args)
    assert done.returncode == 0, done.stdout + done.stderr


@values_params
def test_objects_are_labelled_and_in_their_namespace(values_file: str | None) -> None:
    values = values_of(values_file)
    moved = {("ServiceMonitor", values["metrics"]["serviceMonitor"]["namespace"]),
             ("ConfigMap", values["grafanaDashboard"]["namespace"])}
    for obj in helm.render(values_file):
        meta = obj["metadata"]
        assert meta["labels"]["app.kubernetes.io/instance"] == helm.RELEASE
        assert meta["labels"]["app.kubernetes.io/part-of"] == "gangsched"
        if obj["kind"] in CLUSTER_SCOPED:
            assert "namespace" not in meta, obj["kind"]
        elif (obj["kind"], meta["namespace"]) not in moved:
            assert meta["namespace"] == helm.NAMESPACE, (obj["kind"], meta["name"])


@values_params
def test_the_operator_runs_restricted(values_file: str | None) -> None:
    objects = helm.render(values_file)
    pod = deployment(objects)["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    security = container(objects)["securityContext"]
    assert security["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork") and not pod.get("hostPID") and not pod.get("hostIPC")


@values_params
def test_the_arguments_are_ones_gangsched_run_accepts(values_file: str | None) -> None:
    main = container(helm.render(values_file))
    assert main["command"] == ["gangsched", "run"]
    args = parse_run(main["args"])
    values = values_of(values_file)
    assert sorted(args.scheduler_name) == sorted(values["schedulerNames"])
    assert args.log_level == values["logLevel"]
    assert args.no_leader_election is not values["leaderElection"]["enabled"]
    assert args.no_scheduled_events is not values["scheduledEvents"]
    assert args.metrics_port == (values["metrics"]["port"] if values["metrics"]["enabled"] else 0)
    assert getattr(args, "dashboard_port", None) == (
        values["dashboard"]["port"] if values["dashboard"]["enabled"] else None)
    for extra in values["extraArgs"]:
        assert extra in main["args"]


@values_params
def test_the_pods_match_the_selector_and_the_bindings_name_the_service_account(
        values_file: str | None) -> None:
    objects = helm.render(values_file)
    spec = deployment(objects)["spec"]
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    account = spec["template"]["spec"]["serviceAccountName"]
    created = [o["metadata"]["name"] for o in helm.by_kind(objects, "ServiceAccount")]
    assert created in ([account], [])
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        binding = helm.one(objects, kind)
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account,
                                        "namespace": helm.NAMESPACE}]
        role_kind = "ClusterRole" if kind == "ClusterRoleBinding" else "Role"
        assert binding["roleRef"]["name"] == helm.one(objects, role_kind)["metadata"]["name"]
    for schema in helm.by_kind(objects, "FlowSchema"):
        (rule,) = schema["spec"]["rules"]
        assert rule["subjects"][0]["serviceAccount"] == {"name": account,
                                                         "namespace": helm.NAMESPACE}
        level = schema["spec"]["priorityLevelConfiguration"]["name"]
        assert level == helm.one(objects, "PriorityLevelConfiguration")["metadata"]["name"]


@values_params
def test_services_select_the_operator_and_name_its_ports(values_file: str | None) -> None:
    objects = helm.render(values_file)
    pod_labels = deployment(objects)["spec"]["template"]["metadata"]["labels"]
    ports = {p["name"]: p["containerPort"] for p in container(objects)["ports"]}
    for service in helm.by_kind(objects, "Service"):
        assert service["spec"]["type"] == "ClusterIP"
        assert service["spec"]["selector"].items() <= pod_labels.items()
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in ports, (service["metadata"]["name"], port)
    for monitor in helm.by_kind(objects, "ServiceMonitor"):
        wanted = monitor["spec"]["selector"]["matchLabels"].items()
        (service,) = [s for s in helm.by_kind(objects, "Service")
                      if wanted <= s["metadata"]["labels"].items()]
        namespaces = monitor["spec"]["namespaceSelector"]["matchNames"]
        assert service["metadata"]["namespace"] in namespaces
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["port"] in {p["name"] for p in service["spec"]["ports"]}


@values_params
def test_queues_are_what_the_values_say_and_valid_for_the_crd(values_file: str | None) -> None:
    rendered = {q["metadata"]["name"]: q for q in helm.by_kind(helm.render(values_file), "Queue")}
    wanted = values_of(values_file)["queues"]
    assert sorted(rendered) == sorted(q["name"] for q in wanted)
    for q in wanted:
        obj = rendered[q["name"]]
        assert obj["apiVersion"] == "gangsched.io/v1alpha1"
        assert obj["spec"] == q.get("spec", {})
        assert crd_checks.validation_errors(obj) == [], q["name"]


@values_params
def test_the_profile_is_mounted_where_the_operator_reads_it(values_file: str | None) -> None:
    objects = helm.render(values_file)
    profile = values_of(values_file)["profile"]
    (args,) = [a.removeprefix("--profile=") for a in container(objects)["args"]
               if a.startswith("--profile=")] or [None]
    maps = [m for m in helm.by_kind(objects, "ConfigMap")
            if m["metadata"]["name"].endswith("-profile")]
    if not profile:
        assert args is None and maps == []
        return
    assert args is not None
    (config_map,) = maps
    path = pathlib.PurePosixPath(args)
    (mount,) = [m for m in container(objects)["volumeMounts"] if m["mountPath"] == str(path.parent)]
    volumes = {v["name"]: v for v in deployment(objects)["spec"]["template"]["spec"]["volumes"]}
    assert volumes[mount["name"]]["configMap"]["name"] == config_map["metadata"]["name"]
    text = config_map["data"][path.name]
    assert yaml.safe_load(text) == profile
    profile_from_k8s(yaml.safe_load(text))  # raises on what the operator would refuse
    annotations = deployment(objects)["spec"]["template"]["metadata"]["annotations"]
    assert "checksum/profile" in annotations


def test_ha_values_run_two_replicas_with_leader_election_on_their_own_image() -> None:
    objects = helm.render("ha-values.yaml")
    spec = deployment(objects)["spec"]
    assert spec["replicas"] == 2
    assert "--no-leader-election" not in container(objects)["args"]
    assert container(objects)["image"] == "registry.example.com/platform/gangsched:0.1.0-rc1"
    pod = spec["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "registry-credentials"}]
    assert pod["affinity"] == values_of("ha-values.yaml")["affinity"]
    assert pod["tolerations"] == values_of("ha-values.yaml")["tolerations"]
    namespace = helm.one(objects, "Namespace")
    assert namespace["metadata"]["name"] == helm.NAMESPACE
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"


def test_the_grafana_configmap_holds_the_dashboard_file_for_the_sidecar() -> None:
    objects = helm.render("observability-values.yaml")
    (config_map,) = [m for m in helm.by_kind(objects, "ConfigMap")
                     if m["metadata"]["name"].endswith("-grafana-dashboard")]
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["metadata"]["namespace"] == "monitoring"
    shipped = json.loads((CHART / "dashboards" / "gangsched.json").read_text())
    assert json.loads(config_map["data"]["gangsched.json"]) == shipped


def test_a_release_of_another_name_and_namespace_is_consistent() -> None:
    objects = helm.render(None, release="batch", namespace="batch-system")
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("Deployment", "batch-gangsched") in names
    assert ("ClusterRole", "batch-gangsched") in names
    binding = helm.one(objects, "ClusterRoleBinding")
    assert binding["subjects"][0] == {"kind": "ServiceAccount", "name": "batch-gangsched",
                                      "namespace": "batch-system"}
    for obj in objects:
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == "batch-system"


# --- refusals ---------------------------------------------------------------------------

def sets(*pairs: str) -> tuple[str, ...]:
    return tuple(a for pair in pairs for a in ("--set", pair))


REFUSED = [
    pytest.param(sets("replicaCount=two"), "/replicaCount", id="string-replicas"),
    pytest.param(sets("replicas=2"), "'replicas'", id="unknown-key"),
    pytest.param(sets("image.pullPolicy=Sometimes"), "/image/pullPolicy", id="pull-policy"),
    pytest.param(sets("metrics.port=70000"), "/metrics/port", id="port-range"),
    pytest.param(("--set-json", "schedulerNames=[]"), "/schedulerNames", id="no-scheduler-names"),
    pytest.param(sets("schedulerNames=null"), "schedulerNames", id="scheduler-names-removed"),
    pytest.param(sets("schedulerNames[0]=Not_A_Name"), "/schedulerNames/0",
                 id="bad-scheduler-name"),
    pytest.param(sets("logLevel=LOUD"), "/logLevel", id="log-level"),
    pytest.param(sets("queues[0].spec.max.cpu=8"), "/queues/0", id="queue-without-name"),
    pytest.param(sets("dashboard.enabled=yes"), "/dashboard/enabled", id="string-bool"),
    pytest.param(sets("scheduledEvents=off"), "/scheduledEvents", id="scheduled-events-string"),
    pytest.param(sets("leaderElection.enabled=false", "replicaCount=2"), "replicaCount: 1",
                 id="replicas-without-election"),
    pytest.param(sets("metrics.serviceMonitor.enabled=true", "metrics.service.enabled=false"),
                 "metrics.service.enabled", id="monitor-without-service"),
    pytest.param(sets("serviceAccount.create=false"), "serviceAccount.name", id="account-unnamed"),
]


@pytest.mark.parametrize(("args", "path"), REFUSED)
def test_helm_template_refuses_a_wrong_value_with_its_path(args: tuple[str, ...],
                                                          path: str) -> None:
    done = helm.run("template", helm.RELEASE, str(CHART), "--namespace", helm.NAMESPACE, *args)
    assert done.returncode != 0
    assert path in done.stderr, done.stderr


@pytest.mark.parametrize(("args", "path"), REFUSED[:2])
def test_helm_install_refuses_a_wrong_value_with_its_path(args: tuple[str, ...],
                                                         path: str) -> None:
    """``--dry-run=client`` validates as a real install does, before asking a cluster."""
    done = helm.run("install", helm.RELEASE, str(CHART), "--namespace", helm.NAMESPACE,
                    "--dry-run=client", *args)
    assert done.returncode != 0
    assert path in done.stderr, done.stderr


def test_the_schema_describes_every_value_and_nothing_else() -> None:
    """A value in values.yaml the schema does not know would be refused; a schema entry
    no value has is a value the chart does not read."""
    schema = json.loads((CHART / "values.schema.json").read_text())

    def walk(node: dict[str, Any], values: dict[str, Any], path: str) -> None:
        props = node.get("properties", {})
        assert node.get("additionalProperties") is False, path
        assert set(values) == set(props) - {"global"}, path
        for key, value in values.items():
            if props[key].get("type") == "object" and "properties" in props[key]:
                walk(props[key], value, f"{path}.{key}")

    walk(schema, yaml.safe_load((CHART / "values.yaml").read_text()), "")


# --- NOTES ------------------------------------------------------------------------------


def test_notes_say_how_to_check_the_install() -> None:
    text = helm.notes()
    assert "kubectl get gsq" in text
    assert f"kubectl -n {helm.NAMESPACE} rollout status deployment/gangsched" in text
    assert "port-forward" not in text  # no dashboard by default
    assert "helm uninstall" in text and "CRDs" in text


def test_notes_show_the_dashboards_port_forward_to_the_leader() -> None:
    text = helm.notes("observability-values.yaml")
    assert "get lease gangsched-leader -o jsonpath='{.spec.holderIdentity}') 9091:9091" in text
    assert "http://localhost:9091/" in text
    text = helm.notes(None, "dashboard.enabled=true", "leaderElection.enabled=false")
    assert "port-forward deployment/gangsched 9091:9091" in text
