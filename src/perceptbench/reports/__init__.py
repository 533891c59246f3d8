"""Reports written from trial records and score rows alone (no torch, no model):
the headline table (:mod:`.headline`), figures (:mod:`.figures`), paired model
comparisons (:mod:`.paired`) and the self-contained HTML page (:mod:`.html`)."""
