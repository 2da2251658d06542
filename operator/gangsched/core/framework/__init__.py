"""The scheduling framework: kube-scheduler's extension points in the pure core.

Placement is "run the profile". A *plugin* is a small object with a ``name`` that
implements some of the protocols of :mod:`~gangsched.core.framework.interface`
(PreEnqueue, PreFilter, Filter, Score with NormalizeScore, Reserve/Unreserve,
PreBind). A *profile* (:mod:`~gangsched.core.values.profile`) says which plugins run
at which point, with what score weights and arguments, in the shape of
``KubeSchedulerConfiguration``. The :class:`~gangsched.core.framework.runner.Framework`
runs them.

How a plugin registers
----------------------

The framework never imports a plugin. The registry lives outside it, in
:mod:`gangsched.core.plugins.registry`:

1. write a module under ``gangsched/core/plugins/`` with a class that has ``name`` (the
   kube-scheduler name, e.g. ``"VolumeBinding"``) and the methods of the points it
   serves; a Filter also says whether it is ``static`` (depends only on the node and the
   pod's :class:`~gangsched.core.framework.podinfo.Constraints`, so it may be cached);
2. add ``NAME: factory`` to ``REGISTRY`` there; the factory takes the validated
   arguments (``None`` for defaults) and returns the plugin;
3. add ``(NAME, weight)`` to ``DEFAULT_PLUGINS`` if the default profile enables it
   (the weight matters only for scorers);
4. if it takes arguments, teach ``gangsched.translate.profile`` to read them from
   ``pluginConfig`` into the plugin's own frozen args value.

Plugins read the cluster through the :class:`~gangsched.core.framework.interface.Snapshot`
protocol (nodes, the placed-pod index, namespace labels) and never change it; what a
plugin must do when a pod is bound comes back as decisions in
``CycleState.decisions`` (PreBind).
"""
