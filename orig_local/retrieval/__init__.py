"""Retrieval: search backends, page reader, safe image fetcher, evidence store."""
