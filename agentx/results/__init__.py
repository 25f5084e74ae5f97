"""Every JSON file agentx writes, as a tree of frozen values: one module per schema.

- :mod:`agentx.results.summary` — ``summary.json`` (``agentx.summary/1``)
- :mod:`agentx.results.stats` — ``agentx stats --json`` (``agentx.stats/1``)
- :mod:`agentx.results.simulate` — ``agentx simulate --json`` (``agentx.simulate/1``)
- :mod:`agentx.results.compare` — ``agentx report --compare --json`` (``agentx.compare/1``)
- :mod:`agentx.results.sweep` — ``sweep.json`` (``agentx.sweep/1``)
- :mod:`agentx.results.scrub` — ``agentx scrub --report`` (``agentx.scrub/1``)

Each value has ``to_json()`` (the object the file holds, keys in the contract's order) and
``from_json()`` (its inverse, :class:`agentx.core.errors.ShapeError` on a field of the wrong
type); :mod:`agentx.results.base` holds the getters they read with. The package sits just
above ``agentx.core``: the producers (metrics, workload, simulate, replay) and the readers
(report, the CLI) all import it, it imports nothing of theirs.
"""
