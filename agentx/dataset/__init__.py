"""Shareable trace datasets: ``agentx dataset pack``, ``verify`` and ``push``.

- :mod:`agentx.dataset.layout` — where each file goes, which rows each config holds
- :mod:`agentx.dataset.options` — the commands' options, each declared as its flag
- :mod:`agentx.dataset.gate` — what is refused before anything is packed
- :mod:`agentx.dataset.pack` — the packing
- :mod:`agentx.dataset.figures` — a config's statistics (pack and verify both measure with it)
- :mod:`agentx.dataset.plots` — the card's PNG charts
- :mod:`agentx.dataset.scan` — the secret scan of the packed files
- :mod:`agentx.dataset.card` — ``README.md``, rendered from the manifest
- :mod:`agentx.dataset.verify` — checksums, schema, statistics against the card
- :mod:`agentx.dataset.push` — to the Hugging Face hub

The manifest is :mod:`agentx.results.dataset`; reading a packed directory (``agentx stats``,
``replay``, ``simulate``) is :func:`agentx.store.dataset.trace_files`'s and
:func:`agentx.formats.resolve_trace`'s.
"""
