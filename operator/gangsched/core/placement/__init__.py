"""Where a pod may go and where it goes: the cluster view, its tally and diagnosis."""
