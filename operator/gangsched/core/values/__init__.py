"""Frozen data: the model, resources, constraints, observations and decisions."""
