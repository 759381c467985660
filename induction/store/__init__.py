"""Files and caches: atomic writes, claimed outputs, content fingerprints and seals."""
