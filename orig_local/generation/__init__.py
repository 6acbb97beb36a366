"""Image generators (one backend per file, chosen by preset)."""
