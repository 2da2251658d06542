"""The simulator: the real core under a simulated clock, with no cluster.

* :mod:`~gangsched.sim.world`: carries out the core's decisions as the operator would;
* :mod:`~gangsched.sim.source`, :mod:`~gangsched.sim.schema`, :mod:`~gangsched.sim.parse`
  and :mod:`~gangsched.sim.parse_jobs`: workload files, with errors at their line and
  column; :mod:`~gangsched.sim.workload` is what they build;
  :mod:`~gangsched.sim.generate` makes large ones;
* :mod:`~gangsched.sim.engine`: the event-driven clock and the job model, over a
  :mod:`~gangsched.sim.backends` scheduler (the core, or :mod:`~gangsched.sim.naive`);
* :mod:`~gangsched.sim.results`, :mod:`~gangsched.sim.report`, :mod:`~gangsched.sim.plot`:
  metrics, text and charts; :mod:`~gangsched.sim.command` is ``gangsched simulate``.
"""
