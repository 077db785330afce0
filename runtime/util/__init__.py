"""The helpers a reconciler reaches for: finalizers, owner references, status conditions,
merge patches, create-or-patch, server-side apply, label selectors, the trio-following wall
clock, structured logging, and the building blocks of controllers' options (Go-style durations,
constrained scalars)."""
