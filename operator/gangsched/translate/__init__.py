"""Translation between Kubernetes API JSON and the core models. Pure functions only.

No I/O, no clock (callers pass ``now``), no client imports. Raw API objects (plain dicts)
come in, core values go out, and core decisions come back as API bodies. Bad user input
never raises: it becomes an ``invalid`` message that names the JSON path of every problem.

* :mod:`~gangsched.translate.labels` -- the label and annotation names;
* :mod:`~gangsched.translate.times` -- RFC 3339 timestamps to and from epoch seconds;
* :mod:`~gangsched.translate.fields` -- typed field readers with paths in their errors;
* :mod:`~gangsched.translate.k8s_constraints` -- tolerations, taints, selectors, affinity;
* :mod:`~gangsched.translate.gangspec` -- task groups and scheduling policies (CRD and
  pods-first annotations);
* :mod:`~gangsched.translate.pods`, :mod:`~gangsched.translate.nodes`,
  :mod:`~gangsched.translate.apps`, :mod:`~gangsched.translate.podgroups`,
  :mod:`~gangsched.translate.queues` -- objects to core models;
* :mod:`~gangsched.translate.render` -- decisions to API bodies (placeholder pods, Events,
  pod conditions), with :mod:`~gangsched.translate.statuses` and
  :mod:`~gangsched.translate.conditions` for the custom resources' status.
"""
