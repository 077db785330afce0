"""The embedded demo (``kubetrio run --embedded``): a MachineDeployment's life in about a minute.

It creates the sim MachineClasses and a MachineDeployment (RollingUpdate) of half the machines,
scales it up, rolls it to a second class, then moves it to a third class in place (MCM's
``InPlaceUpdate`` strategy: the same VMs, drained, updated by the node's agent and moved to the
new MachineSet), asks MCM to preserve one machine should it fail and breaks its VM at the
simulated cloud (the machine goes Unknown, then Failed after its health timeout, and is kept
with its drained node instead of being replaced until the demo releases it; then its MachineSet
replaces it), puts a workload with volumes and a disruption budget on the machines, and scales
the deployment down, so the machine controller's deletion flow — drain (pods and their volumes
move to the other machines), VM deletion, node deletion, finalizer removal — runs for real
against the simulated cluster. Progress is shown live (a table on a terminal, one line per
change otherwise) and a summary of the measured times of each phase ends it.

The demo is a companion of the manager, not part of it: it only reads the cluster through its
own informers and writes what a user would (the deployment, its scale, class and strategy, the
node's preserve annotation); the MachineSet and machine controllers do everything else.

One module per part: ``scenario`` (the story and its waits), ``seed`` (what it writes, as a user
would), ``cluster`` (its informers), ``view`` (rows and lines), ``summary`` (the record of
times), ``output`` (terminal or plain lines), ``webhooks`` (``--webhooks``: their configurations
installed in the embedded cluster).

The package itself holds only the demo's defaults, which ``kubetrio run``'s flags show: a manager
that is not running the demo never imports the rest.
"""

DEFAULT_MACHINES = 4
PROVIDERS = ("sim", "aws")  # ``kubetrio run --embedded --provider``
# The cluster the demo's EC2 instances are tagged for (``kubernetes.io/cluster/<name>``): the
# driver's orphan sweep, the instances' kubelets and the orphans check all find them by it.
EC2_CLUSTER = "kubetrio-demo"
