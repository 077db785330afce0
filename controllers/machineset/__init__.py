"""The MachineSet controller (MCM's): keeps ``spec.replicas`` machines of a set's template
running, replaces Failed ones, adopts matching orphans and reports the set's status."""
