"""gangsched: a gang scheduler for Kubernetes.

The package has three layers, checked in CI by import-linter:

* ``gangsched.core``: the pure, synchronous scheduling core. It takes observations and an
  explicit ``now`` and returns decisions. No I/O, no clock, no clients.
* ``gangsched.shell`` and ``gangsched.sim``: the Kubernetes operator (kopf handlers, watches,
  the scheduling loop and binders) and the simulator. Both drive the same core.
* ``gangsched.cli``: the ``gangsched`` command line.
"""

__version__ = "0.1.0"
