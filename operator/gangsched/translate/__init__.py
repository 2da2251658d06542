"""Translation between Kubernetes API JSON and the core models. Pure functions only."""
