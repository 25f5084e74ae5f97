"""The prefix-cache model, from tokens to a serving engine: a request rendered into token ids
(``tokens``, ``tokenizer``), chained block hashes (``hashing``), the unbounded cache (``cache``)
and the theoretical hit rate built on it (``theory``), the bounded KV cache (``kvcache``), the
serving-engine model that holds one (``engine``), and token-exact synthetic text (``synth``)."""
