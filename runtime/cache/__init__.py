"""The shared informer cache: reflectors (LIST then WATCH), per-kind stores with indexes and
typed listers, one informer per (kind, selector) shared by every controller, and waits on
changes."""
