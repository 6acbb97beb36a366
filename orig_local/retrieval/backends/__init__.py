"""Search backends, one per file; see :data:`orig_local.retrieval.BACKENDS`."""
