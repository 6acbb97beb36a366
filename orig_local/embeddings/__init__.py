"""open_clip image/text embeddings and embedding-based image dedup."""
