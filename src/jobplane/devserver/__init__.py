"""``jobplane dev``: the application's composition root for one machine.

It is the only place that puts the compiler, the embedded local AWS, the runtime (control plane,
reconciler, notifier, slow-run check) and the portal together; none of those import it.
"""
