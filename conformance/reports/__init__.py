"""What a run comes to, and every way it is told: results.py (a Result for each case: the one model every
command makes), causes.py (the summary, and failures grouped by cause), reproduce.py (how a failure is
sent again), terminal.py (what a run says as it goes), formats.py (JUnit, JSON and HTML files) and
grid.py (the matrix: implementations side by side), with readback.py (a report written elsewhere, read
back as its column)."""
