"""Studies: many benchmark runs (conditions x backbones x generators x ablations) from one plan
on one workstation, each model loaded as few times as possible, servers managed, resumable.

``plan.py`` (the YAML schema), ``status.py`` (progress read from run folders), ``schedule.py``
(the ordered steps), ``commands.py`` (each step's ``orig eval`` / ``orig report`` command line),
``share.py`` (one agent phase for runs differing only in the generator), ``generate_group.py``
(one generate process and instance per generator), ``servers.py`` (vLLM per backbone and for
the judge), ``runner.py`` (executes a schedule), ``guard.py`` (children die with the study).
Nothing heavy is imported here.
"""
