"""The read-only web dashboard's pure parts, shared by the operator and the simulator.

* :mod:`~gangsched.view.board` keeps what the dashboard shows of the decisions the core
  made: the last status of every Queue, Application and PodGroup, their recent Events and
  the time each gang took to be complete;
* :mod:`~gangsched.view.model` turns that, and the nodes as the core holds them, into a
  view model of plain frozen values (rows, bars, filters), and filters it;
* :mod:`~gangsched.view.render` writes the view model as HTML pages (every text escaped)
  and JSON; the pages need only the two files in ``static/``, shipped in the package.

The operator serves the pages (:mod:`gangsched.shell.dashboard`), the simulator writes
them to a folder (:mod:`gangsched.sim.html`). Nothing here does I/O, reads a clock or
imports a client: this layer sits over the translation and the core, under both.
"""
