"""jobplane: scheduled workflows for Python teams on AWS.

Subpackages follow the design: ``compiler`` turns Jsonnet definitions into Step Functions ASL,
Terraform JSON and a catalog; ``platform`` holds the runtime contract every other part shares;
``runner`` and ``portal`` are the container entrypoint and the web console.
"""

__version__ = "0.1.0"
