"""Controllers: the typed, rate-limited work queue, its rate limiters, reconcile workers, the
builder that wires event sources and predicates to a reconciler, and the metrics
controller-runtime's dashboards read."""
