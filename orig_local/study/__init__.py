"""Studies: many benchmark runs (conditions x backbones x generators x ablations) from one plan
on one workstation, each model loaded as few times as possible, servers managed, resumable.

``plan.py`` (the YAML schema), ``status.py`` (progress read from run folders), ``schedule.py``
(the ordered steps), ``commands.py`` (each step's ``orig eval`` / ``orig report`` command line),
``servers.py`` (vLLM per backbone and for the judge), ``runner.py`` (executes a schedule),
``guard.py`` (children die with the study). Nothing heavy is imported here.
"""
