"""Real-looking Kubernetes objects for the translation tests, and builders around them.

Each ``*_YAML`` is shaped like what the API server returns (defaults filled in, status
present); the builders return deep copies so that a test may edit its own.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import yaml

SPARK_DRIVER_YAML = """
apiVersion: v1
kind: Pod
metadata:
  name: spark-pi-7c1e0a8f-driver
  namespace: spark-jobs
  uid: 0b9f3c2e-6a47-4d43-9a51-6d2f1f1f8e01
  creationTimestamp: "2024-05-01T12:00:00Z"
  labels:
    spark-app-selector: spark-5d2f9b6d7c6e4d1f8a3b
    spark-app-name: spark-pi
    spark-role: driver
    spark-version: 3.5.1
    gangsched.io/app: spark-pi-7c1e0a8f
    gangsched.io/queue: research
  annotations:
    gangsched.io/task-group: spark-driver
    gangsched.io/task-groups: |-
      [
        {
          "name": "spark-driver",
          "minMember": 1,
          "minResource": {"cpu": "1", "memory": "2Gi"},
          "nodeSelector": {"kubernetes.io/os": "linux"}
        },
        {
          "name": "spark-executor",
          "minMember": 4,
          "minResource": {"cpu": "2", "memory": "4Gi"},
          "nodeSelector": {"kubernetes.io/os": "linux"},
          "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "spark", "effect": "NoSchedule"}
          ],
          "affinity": {
            "podAntiAffinity": {
              "preferredDuringSchedulingIgnoredDuringExecution": [{
                "weight": 100,
                "podAffinityTerm": {
                  "topologyKey": "kubernetes.io/hostname",
                  "labelSelector": {"matchLabels": {"spark-role": "executor"}}
                }
              }]
            }
          },
          "labels": {"spark-role": "executor"}
        }
      ]
    gangsched.io/scheduling-policy: placeholderTimeoutInSeconds=60 gangSchedulingStyle=Hard
spec:
  schedulerName: gangsched
  priorityClassName: batch-high
  priority: 1000
  serviceAccountName: spark
  restartPolicy: Never
  nodeSelector:
    kubernetes.io/os: linux
  containers:
  - name: spark-kubernetes-driver
    image: apache/spark:3.5.1
    args: [driver, --properties-file, /opt/spark/conf/spark.properties,
           --class, org.apache.spark.examples.SparkPi, local:///opt/spark/examples/jars/spark-examples.jar]
    ports:
    - {containerPort: 7078, name: driver-rpc-port, protocol: TCP}
    resources:
      requests: {cpu: "1", memory: 1408Mi}
      limits: {memory: 1408Mi}
  tolerations:
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute,
     tolerationSeconds: 300}
  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute,
     tolerationSeconds: 300}
status:
  phase: Pending
  qosClass: Burstable
"""

ARGO_POD_YAML = """
apiVersion: v1
kind: Pod
metadata:
  name: gang-train-worker-2846113532
  namespace: argo
  uid: 7d1b0c55-2f0e-4f0c-a0f4-35b2c4f1d6aa
  creationTimestamp: "2024-06-03T08:15:42Z"
  labels:
    workflows.argoproj.io/workflow: gang-train
    workflows.argoproj.io/completed: "false"
    gangsched.io/pod-group: gang-train
  annotations:
    workflows.argoproj.io/node-id: gang-train-2846113532
    workflows.argoproj.io/node-name: gang-train[0].worker(1:1)
    gangsched.io/preemptible: "false"
  ownerReferences:
  - apiVersion: argoproj.io/v1alpha1
    kind: Workflow
    name: gang-train
    uid: 1a2b3c4d-0000-4000-8000-000000000001
    controller: true
    blockOwnerDeletion: true
spec:
  schedulerName: gangsched
  priority: 0
  initContainers:
  - name: init
    image: quay.io/argoproj/argoexec:v3.5.5
    command: [argoexec, init]
    resources:
      requests: {cpu: 10m, memory: 64Mi}
      limits: {cpu: 500m, memory: 512Mi}
  - name: proxy
    image: envoyproxy/envoy:v1.30.1
    restartPolicy: Always
    resources:
      requests: {cpu: 100m, memory: 128Mi}
  containers:
  - name: wait
    image: quay.io/argoproj/argoexec:v3.5.5
    command: [argoexec, wait]
    resources:
      requests: {cpu: 10m, memory: 64Mi}
      limits: {cpu: 500m, memory: 512Mi}
  - name: main
    image: pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
    command: [torchrun, train.py]
    resources:
      limits: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1"}
  overhead: {cpu: 250m, memory: 120Mi}
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: nvidia.com/gpu.product, operator: In, values: [NVIDIA-A100-SXM4-80GB]}
  tolerations:
  - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
  nodeName: gpu-node-3
status:
  phase: Running
  startTime: "2024-06-03T08:15:50Z"
"""

KIND_NODE_YAML = """
apiVersion: v1
kind: Node
metadata:
  name: kind-worker2
  uid: 3f7c2d65-9a0e-4b8e-8f1e-0c9b5b2e4d11
  creationTimestamp: "2024-04-30T09:00:00Z"
  labels:
    beta.kubernetes.io/arch: amd64
    beta.kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: kind-worker2
    kubernetes.io/os: linux
    dedicated: spark
spec:
  podCIDR: 10.244.2.0/24
  podCIDRs: [10.244.2.0/24]
  providerID: kind://docker/kind/kind-worker2
  taints:
  - {key: dedicated, value: spark, effect: NoSchedule}
  - {key: node.kubernetes.io/disk-pressure, effect: PreferNoSchedule,
     timeAdded: "2024-05-01T10:00:00Z"}
status:
  addresses:
  - {address: 172.18.0.3, type: InternalIP}
  - {address: kind-worker2, type: Hostname}
  allocatable:
    cpu: "8"
    ephemeral-storage: 102625208Ki
    hugepages-1Gi: "0"
    hugepages-2Mi: "0"
    memory: 16283508Ki
    pods: "110"
  capacity:
    cpu: "8"
    ephemeral-storage: 102625208Ki
    memory: 16283508Ki
    pods: "110"
  conditions:
  - {type: MemoryPressure, status: "False", reason: KubeletHasSufficientMemory,
     lastHeartbeatTime: "2024-05-01T12:00:00Z", lastTransitionTime: "2024-04-30T09:00:00Z"}
  - {type: DiskPressure, status: "False", reason: KubeletHasNoDiskPressure,
     lastHeartbeatTime: "2024-05-01T12:00:00Z", lastTransitionTime: "2024-04-30T09:00:00Z"}
  - {type: PIDPressure, status: "False", reason: KubeletHasSufficientPID,
     lastHeartbeatTime: "2024-05-01T12:00:00Z", lastTransitionTime: "2024-04-30T09:00:00Z"}
  - {type: Ready, status: "True", reason: KubeletReady, message: kubelet is posting ready status,
     lastHeartbeatTime: "2024-05-01T12:00:00Z", lastTransitionTime: "2024-04-30T09:00:30Z"}
  nodeInfo:
    kubeletVersion: v1.30.0
"""

APPLICATION_YAML = """
apiVersion: gangsched.io/v1alpha1
kind: Application
metadata:
  name: llm-finetune
  namespace: ml
  uid: 5e6f7a8b-1111-4222-8333-944445555666
  generation: 3
  creationTimestamp: "2024-05-02T07:30:00Z"
spec:
  queue: research
  priorityClassName: batch-high
  taskGroups:
  - name: launcher
    minMember: 1
    minResource: {cpu: 500m, memory: 1Gi}
  - name: worker
    minMember: 8
    minResource: {cpu: "8", memory: 64Gi, nvidia.com/gpu: 1}
    nodeSelector: {nvidia.com/gpu.present: "true"}
    tolerations:
    - {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
    affinity:
      nodeAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1a]}
      podAffinity:
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 50
          podAffinityTerm:
            topologyKey: topology.kubernetes.io/zone
            labelSelector: {matchLabels: {job: llm-finetune}}
    topologySpreadConstraints:
    - maxSkew: 1
      topologyKey: kubernetes.io/hostname
      whenUnsatisfiable: ScheduleAnyway
      labelSelector: {matchLabels: {job: llm-finetune}}
    labels: {job: llm-finetune, role: worker}
    annotations: {cluster-autoscaler.kubernetes.io/safe-to-evict: "false"}
  schedulingPolicy:
    style: Hard
    placeholderTimeoutSeconds: 120
    waitingTimeoutSeconds: 10
status:
  state: Accepted
  reason: Accepted
  message: queue research
  stateSince: "2024-05-02T07:30:01Z"
  placeholderTimerStart: "2024-05-02T07:30:02.250000Z"
  reserved: 3/9
"""

PODGROUP_YAML = """
apiVersion: gangsched.io/v1alpha1
kind: PodGroup
metadata:
  name: gang-train
  namespace: argo
  uid: 9a8b7c6d-2222-4333-8444-955556666777
  generation: 1
  creationTimestamp: "2024-06-03T08:15:40Z"
spec:
  minMember: 4
  minResources: {cpu: "16", memory: 64Gi, nvidia.com/gpu: 4}
  scheduleTimeoutSeconds: 300
  mode: NonStrict
  gangGroup: [argo/gang-train, argo/gang-eval]
  totalNumber: 6
  queue: research
status:
  phase: Scheduling
  scheduleStartTime: "2024-06-03T08:15:45Z"
"""

QUEUE_YAML = """
apiVersion: gangsched.io/v1alpha1
kind: Queue
metadata:
  name: research
  uid: 1d2e3f4a-3333-4444-8555-a66667777888
  generation: 1
  creationTimestamp: "2024-04-01T00:00:00Z"
spec:
  parent: root
  max: {cpu: "64", memory: 256Gi, nvidia.com/gpu: 8}
  guaranteed: {cpu: "16", memory: 64Gi}
  maxApplications: 10
  sortPolicy: priority
  stateAwareTimeoutSeconds: 120
  weight: 2
  reclaimable: false
"""


def _load(text: str) -> dict[str, Any]:
    loaded = yaml.safe_load(text)
    assert isinstance(loaded, dict)
    return loaded


_OBJECTS = {
    "spark": _load(SPARK_DRIVER_YAML),
    "argo": _load(ARGO_POD_YAML),
    "node": _load(KIND_NODE_YAML),
    "app": _load(APPLICATION_YAML),
    "podgroup": _load(PODGROUP_YAML),
    "queue": _load(QUEUE_YAML),
}


def spark_driver() -> dict[str, Any]:
    return copy.deepcopy(_OBJECTS["spark"])


def argo_pod() -> dict[str, Any]:
    return copy.deepcopy(_OBJECTS["argo"])


def kind_node() -> dict[str, Any]:
    return copy.deepcopy(_OBJECTS["node"])


def application() -> dict[str, Any]:
    return copy.deepcopy(_OBJECTS["app"])


def podgroup() -> dict[str, Any]:
    return copy.deepcopy(_OBJECTS["podgroup"])


def queue() -> dict[str, Any]:
    return copy.deepcopy(_OBJECTS["queue"])


def make_pod(
    name: str = "p",
    namespace: str = "default",
    *,
    containers: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A minimal pending pod of ours; ``spec`` entries are added to ``spec`` as given."""
    pod_spec: dict[str, Any] = {
        "schedulerName": "gangsched",
        "containers": containers
        if containers is not None
        else [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
    }
    pod_spec.update(spec)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "labels": dict(labels or {}),
            "annotations": dict(annotations or {}),
        },
        "spec": pod_spec,
        "status": {"phase": "Pending"},
    }


def with_spec(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``obj`` with ``spec`` fields replaced (``None`` removes a field)."""
    for key, value in fields.items():
        if value is None:
            obj["spec"].pop(key, None)
        else:
            obj["spec"][key] = value
    return obj


DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
QUALIFIED_NAME = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
)


def is_dns_subdomain(text: str) -> bool:
    return len(text) <= 253 and DNS_SUBDOMAIN.fullmatch(text) is not None


def is_dns_label(text: str) -> bool:
    return len(text) <= 63 and DNS_LABEL.fullmatch(text) is not None


def is_label_value(text: str) -> bool:
    return len(text) <= 63 and LABEL_VALUE.fullmatch(text) is not None


def is_qualified_name(text: str) -> bool:
    """A label key: optional DNS-subdomain prefix and a name of at most 63 characters."""
    if QUALIFIED_NAME.fullmatch(text) is None:
        return False
    prefix, _, name = text.rpartition("/")
    return len(name) <= 63 and len(prefix) <= 253
