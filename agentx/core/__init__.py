"""The shared vocabulary every stage speaks: the ``AgentxError`` family, an exchange and its
values (``models``), a replayed request's row (``record``), trace flags, URL redaction, outputs
that never destroy a user's file, progress reporting, the bundled examples and percentiles."""
