#!/usr/bin/env python3
"""Operator memory and start-up benchmark: ``python3 bench/operator.py [--quick]``.

The implementation and its documentation are in ``operator_startup.py``; see also
``bench/README.md``. This file has the name the benchmark is known by, which is also
the standard library's ``operator``: the other scripts here (whose folder is first on
``sys.path``) import that one, and this file makes sure they get it.
"""

import os
import sys
from importlib.machinery import SourceFileLoader  # imports nothing that needs operator


def _standard_operator() -> object:
    """The standard library's ``operator``, loaded from its own folder."""
    path = os.path.join(os.path.dirname(os.__file__), "operator.py")
    module = type(sys)("operator")
    module.__file__ = path
    sys.modules["operator"] = module
    SourceFileLoader("operator", path).exec_module(module)
    return module


if __name__ != "__main__":  # imported as ``operator``: be the standard library's
    globals().update({k: v for k, v in vars(_standard_operator()).items()
                      if not k.startswith("__")})
else:
    _standard_operator()
    import operator_startup

    operator_startup.main()
