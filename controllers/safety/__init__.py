"""MCM's safety controller: guards that stop the machine controllers from doing harm when the
world around them looks wrong (an unreachable API server, VMs or nodes nobody accounts for)."""
