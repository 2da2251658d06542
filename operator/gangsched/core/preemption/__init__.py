"""Preemption: preemptors, victims, evictions, deserved shares, deadlocks."""
