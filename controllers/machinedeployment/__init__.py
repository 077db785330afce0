"""The MachineDeployment controller: MCM's revisions, rolling and recreate rollouts, proportional
scaling, rollback, revision history cleanup and the progress deadline, over MachineSets."""
