"""The ``aws`` machine driver: MCM's provider-aws semantics on boto3 (``pip install
kubetrio[aws]``).

The package itself imports nothing: boto3 is tens of MiB, and a manager that registers the
driver but never serves an AWS class should not pay for it. Import from the modules:
``driver`` (``AwsDriver``, the provider IDs), ``clients`` (``Clients``), ``register``
(``register_aws``, ``PROVIDERS``).
"""
