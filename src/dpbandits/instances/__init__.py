"""Problem instances: synthetic GLM, linear and pool instances, replay environments.

Generators are looked up by name in `dpbandits.instances.registry`; their modules are imported
only when used.
"""
