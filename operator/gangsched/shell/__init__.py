"""The Kubernetes shell: watches and kopf handlers in, the core's decisions carried out.

It translates API objects into core observations, runs the one scheduling loop, and
executes decisions through bounded worker pools. It makes no scheduling decision itself.
"""
