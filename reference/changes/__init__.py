"""Schema changes: which changes of a schema break the clients of the old one.

compatibility.py walks two schemas side by side by the protocol's rules;
findings.py says where each change is written and which clients it reaches;
traffic.py replays recorded calls against the new schema, as evidence, and
sites.py says where each of them meets a change; revisions.py reads a
schema as a git revision has it; report.py tells the verdict as text, JSON,
GitHub annotations or JUnit. `python -m reference.schema compare OLD NEW`
(schema.py) is their command.
"""
