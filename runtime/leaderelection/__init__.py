"""Leader election on a Lease with client-go's rules, and the fence that leader-only side
effects consult just before they happen."""
