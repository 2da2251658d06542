"""The placement plugins, one module each (PodTopologySpread a folder of three, as in
kube-scheduler), with kube-scheduler v1.32 semantics.

:mod:`~gangsched.core.plugins.registry` names them and the default profile; see
:mod:`gangsched.core.framework` for how a plugin registers.
"""
