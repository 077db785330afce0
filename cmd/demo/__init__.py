"""The embedded demo (``kubetrio run --embedded``): a MachineDeployment's life in under a minute.

It creates two sim MachineClasses and a MachineDeployment (RollingUpdate) of half the machines,
scales it up, rolls it to the other class, breaks one VM at the simulated cloud (the machine goes
Unknown, Failed after its health timeout, and its MachineSet replaces it), puts a workload with
volumes and a disruption budget on the machines, and scales the deployment down, so the machine
controller's deletion flow — drain (pods and their volumes move to the other machines), VM
deletion, node deletion, finalizer removal — runs for real against the simulated cluster.
Progress is shown live (a table on a terminal, one line per change otherwise) and a summary of
the measured times of each phase ends it.

The demo is a companion of the manager, not part of it: it only reads the cluster through its
own informers and writes what a user would (the deployment, its scale, its class); the MachineSet
and machine controllers do everything else.

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
