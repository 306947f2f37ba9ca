"""The contract between the compiled state machines and everything that runs beside them.

The compiler writes it (into ASL, Terraform and the catalog); the platform, the runner, the
portal and the CLI read it back. It lives at the bottom of the package and imports nothing else
from jobplane, so neither side can drift from it: state names and their classifier, DynamoDB
keys and the item writes (rendered for boto3 or for ASL), the typed catalog, statuses and
policies, the execution input, the runner's command and environment, schedule semantics, the
SNS message schema, AWS names derived from a job, and ``jobplane.toml``.
"""
