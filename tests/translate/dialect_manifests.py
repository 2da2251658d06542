"""Manifests written for other gang schedulers, in their documented formats.

Each is shaped like the example in that project's own documentation (the YuniKorn gang
scheduling guide, Koordinator's gang scheduling design, the scheduler-plugins
coscheduling install guide, Volcano's PodGroup page, Kueue's "Run Plain Pods"), so the
dialect tests run what users of those systems actually write. Counts and sizes are those
of the examples unless a test needs a cluster-sized variant. :func:`pods_of` expands a
workload's pod template into the pods its controller would create.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

# YuniKorn, "Gang Scheduling" user guide: a Job whose pods carry the task groups.
YUNIKORN_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: gang-scheduling-job-example
spec:
  completions: 2
  parallelism: 2
  template:
    metadata:
      labels:
        app: sleep
        applicationId: "gang-scheduling-job-example"
        queue: root.sandbox
      annotations:
        yunikorn.apache.org/task-group-name: task-group-example
        yunikorn.apache.org/task-groups: |-
          [{
              "name": "task-group-example",
              "minMember": 2,
              "minResource": {
                "cpu": "100m",
                "memory": "50M"
              },
              "nodeSelector": {},
              "tolerations": [],
              "affinity": {},
              "topologySpreadConstraints": []
          }]
    spec:
      schedulerName: yunikorn
      restartPolicy: Never
      containers:
        - name: sleep30
          image: "alpine:latest"
          command: ["sleep", "30"]
          resources:
            requests:
              cpu: "100m"
              memory: "50M"
"""

# YuniKorn, same guide, "Gang scheduling Styles": Hard style with a 60 s timeout.
YUNIKORN_HARD_JOB = """
apiVersion: batch/v1
kind: Job
metadata:
  name: gang-app-timeout
spec:
  completions: 4
  parallelism: 4
  template:
    metadata:
      labels:
        app: sleep
        applicationId: gang-app-timeout
        queue: fifo
      annotations:
        yunikorn.apache.org/task-group-name: sched-style
        yunikorn.apache.org/schedulingPolicyParameters: "placeholderTimeoutInSeconds=60
          gangSchedulingStyle=Hard"
        yunikorn.apache.org/task-groups: |-
          [{
              "name": "sched-style",
              "minMember": 4,
              "minResource": {
                "cpu": "1",
                "memory": "1000M"
              },
              "nodeSelector": {},
              "tolerations": [],
              "affinity": {},
              "topologySpreadConstraints": []
          }]
    spec:
      schedulerName: yunikorn
      restartPolicy: Never
      containers:
        - name: sleep30
          image: "alpine:latest"
          imagePullPolicy: "IfNotPresent"
          command: ["sleep", "30"]
          resources:
            requests:
              cpu: "1"
              memory: "1000M"
"""

# Koordinator, gang scheduling design, "Annotation way": two roles in one GangGroup.
# (The doc's namespaces "namespaceA"/"namespaceB" are not valid namespace names.)
KOORDINATOR_GANG_A = """
apiVersion: v1
kind: Pod
metadata:
  name: gang-a-member
  namespace: namespace-a
  annotations:
    gang.scheduling.koordinator.sh/name: gang-a
    gang.scheduling.koordinator.sh/waiting-time: 3600s
    gang.scheduling.koordinator.sh/min-available: "5"
    gang.scheduling.koordinator.sh/total-number: "5"
    gang.scheduling.koordinator.sh/mode: Strict
    gang.scheduling.koordinator.sh/groups: '["namespace-a/gang-a", "namespace-b/gang-b"]'
spec:
  schedulerName: koord-scheduler
  containers:
    - name: worker
      image: busybox
      resources:
        requests:
          cpu: "1"
"""
KOORDINATOR_GANG_B = (
    KOORDINATOR_GANG_A.replace("gang-a-member", "gang-b-member")
    .replace("namespace: namespace-a", "namespace: namespace-b")
    .replace("name: gang-a\n", "name: gang-b\n")
)

# Koordinator, same doc: the lightweight-coscheduling labels it also accepts.
KOORDINATOR_LABELS = """
apiVersion: v1
kind: Pod
metadata:
  name: lightweight
  namespace: default
  labels:
    pod-group.scheduling.sigs.k8s.io: nginx
    pod-group.scheduling.sigs.k8s.io/min-available: "3"
spec:
  schedulerName: koord-scheduler
  containers:
    - name: nginx
      image: nginx
"""

# scheduler-plugins, "Test Coscheduling" in doc/install.md: PodGroup pg1 and a Deployment.
COSCHEDULING_PODGROUP = """
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: pg1
spec:
  scheduleTimeoutSeconds: 10
  minMember: 3
"""
COSCHEDULING_DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: pause
spec:
  replicas: 2
  selector:
    matchLabels:
      app: pause
  template:
    metadata:
      labels:
        app: pause
        scheduling.x-k8s.io/pod-group: pg1
    spec:
      schedulerName: scheduler-plugins-scheduler
      containers:
      - name: pause
        image: registry.k8s.io/pause:3.6
"""

# Volcano, "PodGroup" concept page: the example PodGroup (minMember raised to a gang of 3),
# and plain pods joining it by annotation.
VOLCANO_PODGROUP = """
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata:
  name: test
  namespace: default
spec:
  minMember: 3
  minResources:
    cpu: "3"
    memory: "2048Mi"
  priorityClassName: high-prority
  queue: default
"""
VOLCANO_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: test-member
  namespace: default
  annotations:
    scheduling.k8s.io/group-name: test
    scheduling.volcano.sh/queue-name: default
spec:
  schedulerName: volcano
  containers:
    - name: worker
      image: busybox
      resources:
        requests:
          cpu: "1"
          memory: 512Mi
"""

# Kueue, "Run Plain Pods", examples/pods-kueue/kueue-pod-group.yaml (one of its two pods).
KUEUE_POD = """
apiVersion: v1
kind: Pod
metadata:
  generateName: sample-pod-
  labels:
    kueue.x-k8s.io/queue-name: user-queue
    kueue.x-k8s.io/pod-group-name: "sample-group"
  annotations:
    kueue.x-k8s.io/pod-group-total-count: "2"
spec:
  containers:
  - name: sleep
    image: busybox
    command:
      - sleep
    args:
      - 3s
    resources:
      requests:
        cpu: 3
"""


def load(text: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(text)
    return loaded


def pods_of(text: str, count: int, *, namespace: str = "default",
            uids: bool = True) -> list[dict[str, Any]]:
    """The pods a workload's controller would create (``<name>-<i>``), or ``count`` copies
    of a Pod manifest; with ``uids`` each gets ``uid-<name>`` and the defaults the API
    server would fill in (namespace, phase Pending)."""
    obj = load(text)
    if obj["kind"] == "Pod":
        template = {"metadata": obj["metadata"], "spec": obj["spec"]}
        base = obj["metadata"].get("name") or obj["metadata"].get("generateName", "pod-")
        namespace = obj["metadata"].get("namespace", namespace)
    else:
        template = obj["spec"]["template"]
        base = obj["metadata"]["name"]
    pods = []
    for index in range(count):
        meta = copy.deepcopy(template.get("metadata") or {})
        meta.pop("generateName", None)
        name = f"{base.rstrip('-')}-{index}"
        meta.update(name=name, namespace=namespace)
        pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                               "spec": copy.deepcopy(template["spec"])}
        if uids:
            meta["uid"] = f"uid-{name}"
            pod["status"] = {"phase": "Pending"}
        pods.append(pod)
    return pods


def pod(text: str, **changes: Any) -> dict[str, Any]:
    """The first pod of :func:`pods_of` with ``metadata`` entries changed: ``labels`` and
    ``annotations`` are merged (a value ``None`` removes the key), others replaced."""
    (found,) = pods_of(text, 1)
    meta = found["metadata"]
    for key, value in changes.items():
        if key in ("labels", "annotations"):
            merged = dict(meta.get(key) or {})
            for name, text_value in value.items():
                if text_value is None:
                    merged.pop(name, None)
                else:
                    merged[name] = text_value
            meta[key] = merged
        else:
            meta[key] = value
    return found
