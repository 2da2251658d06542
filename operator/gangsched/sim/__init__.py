"""The simulator: the real core under a simulated clock, with no cluster."""
